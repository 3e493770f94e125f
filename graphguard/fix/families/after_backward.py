"""A kept loss that the iteration itself backwards through the holder (GG101).

`losses.append(loss_fn(...))` then `losses[-1].backward()`: the holder's newest element is the
loss of this iteration, so `.item()` or `.detach()` where it is stored (accumulate.py) would cut
the very loss the backward needs. Its graph is only needed until that backward: the element is
replaced by its detached value right after it, and the holder keeps values, not graphs.
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Source, dotted, enclosing, loc, parse_stmt, subject_name

__all__ = ["detach_after_backward"]


def detach_after_backward(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG101: the holder grows where the finding says and a backward in the same function is
    called on one of its elements (`holder[-1].backward()`): detach that element after it."""
    name = subject_name(f) or ""
    line = loc(f.get("location"))[1]
    if not name or not line:
        return
    grows = src.statement(line)
    if grows is None:
        return
    fn = enclosing(src, grows, cst.FunctionDef)
    for call in src.nodes(cst.Call):
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward"):
            continue
        element = call.func.value
        if not isinstance(element, cst.Subscript) or dotted(element.value) != name \
                or enclosing(src, call, cst.FunctionDef) is not fn or src.start(call) <= line:
            continue
        stmt = src.statement(src.start(call))
        if stmt is None or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Expr) \
                or stmt.body[0].value is not call or not _same_loop(src, stmt, grows):
            continue
        el = src.code(element).strip()
        after = parse_stmt(f"{el} = {el}.detach()")
        yield ("detach-after-backward", src.start(call), src.replace(stmt, cst.FlattenSentinel([stmt, after])),
               f"{el} = {el}.detach() once its backward ran")


def _same_loop(src: Source, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """`a` and `b` are in the body of the same innermost loop (the iteration that grows the holder
    is the one that backwards its element)."""
    def loop(n: cst.CSTNode) -> Any:
        return next((x for x in src.ancestors(n) if isinstance(x, (cst.For, cst.While, cst.FunctionDef))), None)

    la = loop(a)
    return la is not None and la is loop(b) and isinstance(la, (cst.For, cst.While))
