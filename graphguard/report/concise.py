"""``--format concise``: ``path:line:col: GG001 message``, one line per finding (the shape editors'
problem matchers and grep read)."""
from __future__ import annotations

from typing import Any

from ._lines import one_line, ordered, place

__all__ = ["render_concise", "concise_line"]


def concise_line(f: dict[str, Any], default_path: str = "graphguard") -> str:
    p = place(f) or (default_path, 1, 1)
    return f"{p[0]}:{p[1]}:{p[2]}: {f.get('code', 'GG???')} {one_line(f.get('message'))}"


def render_concise(data: dict[str, Any]) -> str:
    """A JSON report (or ``{"findings": [...]}``) as concise lines."""
    target = (data.get("run") or {}).get("target") or "graphguard"
    return "".join(concise_line(f, target) + "\n" for f in ordered(list(data.get("findings", []))))
