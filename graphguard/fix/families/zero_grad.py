"""Insert optimizer.zero_grad() before the backward (GG010)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, subject_name, Source, dotted, insert_before


def zero_grad_before_backward(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG010: call optimizer.zero_grad() before the backward that precedes the step."""
    line = loc(f.get("location"))[1]
    stmt = src.statement(line) if line else None
    if stmt is None:
        return
    step = next((c for c in src.nodes(cst.Call, line) if isinstance(c.func, cst.Attribute)
                 and c.func.attr.value == "step"), None)
    opt = dotted(step.func.value) if step is not None else subject_name(f)  # type: ignore[union-attr]
    if not opt or (step is None and (f.get("subject") or {}).get("kind") in ("tensor", "parameter")):
        return  # a tensor updated by hand has no zero_grad(): manual_zero.py clears it
    block = src.parent.get(stmt)
    body = list(getattr(block, "body", []))
    before = body[:body.index(stmt)] if stmt in body else []
    # the backward: a statement in this block (or a compound one holding it) before the step
    for s in reversed(before):
        text = src.code(s)
        if ".backward(" in text or "autograd.backward(" in text:
            yield ("zero-grad-before-backward", src.start(s), insert_before(src, s, f"{opt}.zero_grad()"),
                   f"{opt}.zero_grad() before the backward")
            break
    loop = next((a for a in src.ancestors(stmt) if isinstance(a, (cst.For, cst.While))), None)
    if loop is not None and isinstance(loop.body, cst.IndentedBlock):
        first = loop.body.body[0]
        yield ("zero-grad-at-iteration-start", src.start(first), insert_before(src, first, f"{opt}.zero_grad()"),
               f"{opt}.zero_grad() at the start of each iteration")
