"""``--format github``: GitHub Actions workflow commands, one per finding:
``::error file=train.py,line=37,col=5,title=GG001 stale-graph::message``. Errors are ``error``,
warnings ``warning``, info ``notice``; values are escaped as the runner expects."""
from __future__ import annotations

from typing import Any

from ._lines import ordered, place

__all__ = ["render_github", "github_line", "COMMANDS"]

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(f: dict[str, Any]) -> str:
    cmd = COMMANDS.get(f.get("severity", ""), "warning")
    props = []
    p = place(f)
    if p:
        props += [f"file={_prop(p[0])}", f"line={p[1]}", f"col={p[2]}"]
    props.append(f"title={_prop(' '.join(x for x in (f.get('code'), f.get('slug')) if x))}")
    message = str(f.get("message") or "").strip()
    return f"::{cmd} {','.join(props)}::{_data(message)}"


def render_github(data: dict[str, Any]) -> str:
    return "".join(github_line(f) + "\n" for f in ordered(list(data.get("findings", []))))
