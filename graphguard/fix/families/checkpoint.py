"""Non-reentrant checkpointing when no input requires grad (GG015)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, Source, dotted, with_kwarg


def checkpoint_non_reentrant(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG015: a reentrant checkpoint whose inputs do not require grad gives its parameters no
    gradient: pass use_reentrant=False (nearest the finding first)."""
    anchors = [ln for ln in [loc(r.get("location"))[1] for r in related(f, "fix-at", "cut-by")]
               + [loc(f.get("location"))[1], loc((f.get("subject") or {}).get("created_at"))[1]] if ln]
    calls = [c for c in src.nodes(cst.Call)
             if (dotted(c.func) or "").split(".")[-1] in ("checkpoint", "checkpoint_sequential")
             and not any(a.keyword is not None and a.keyword.value == "use_reentrant"
                         and isinstance(a.value, cst.Name) and a.value.value == "False" for a in c.args)]
    for c in sorted(calls, key=lambda c: min((abs(src.start(c) - a) for a in anchors), default=0))[:3]:
        yield ("checkpoint-non-reentrant", src.start(c), src.replace(c, with_kwarg(c, "use_reentrant", "False")),
               "checkpoint(..., use_reentrant=False)")
