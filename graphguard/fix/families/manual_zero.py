"""Clear a tensor's gradient right after a hand-written update reads it (GG010 without an optimizer).

A training loop that updates its tensors itself (`w.data -= lr * w.grad`, `p.sub_(lr * p.grad)`)
has no `optimizer.zero_grad()` to call: each backward adds to the `.grad` the previous update
already used. The remedy the rule gives is `w.grad.zero_()` after the update. It goes right after
the statement the finding locates (the update), on the very tensor that statement updates, so an
update written once in a helper looping over the parameters (`for p in params: p.data -= ...`)
clears every one of them; the next backward then starts from zero, as with an optimizer.
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Source, dotted, loc, parse_stmt

Out = Iterator[tuple[str, int, str, str]]


def reads_grad(node: cst.CSTNode, base: str) -> bool:
    """`node` reads `base.grad` (the update is computed from the gradient it would clear)."""
    found = False

    class V(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> None:
            nonlocal found
            if n.attr.value == "grad" and dotted(n.value) == base:
                found = True

    node.visit(V())
    return found


def _strip_data(node: cst.BaseExpression) -> str | None:
    """`w` for `w` or `w.data` (the tensor whose values an update writes)."""
    if isinstance(node, cst.Attribute) and node.attr.value == "data":
        node = node.value
    return dotted(node)


def updated_tensor(small: cst.CSTNode) -> str | None:
    """The tensor a small statement updates in place from its own gradient: `w -= ...`,
    `w.data -= ...`, `w.data.sub_(...)`, `w.add_(...)` (any in-place method), each reading
    `w.grad`; None for anything else."""
    if isinstance(small, cst.AugAssign):
        base = _strip_data(small.target)
        return base if base and reads_grad(small.value, base) else None
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
            and isinstance(small.value.func, cst.Attribute):
        method = small.value.func.attr.value
        if method.endswith("_") and not method.startswith("_") and method != "zero_":
            base = _strip_data(small.value.func.value)
            if base and any(reads_grad(a.value, base) for a in small.value.args):
                return base
    return None


def _optimizer_step(src: Source, line: int) -> bool:
    return any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "step" for c in src.nodes(cst.Call, line))


def zero_after_manual_update(src: Source, f: dict[str, Any], file: str) -> Out:
    """GG010 located at a hand-written update (no `.step()` call there): `<t>.grad.zero_()` right
    after it, for each tensor the statement updates from its gradient."""
    line = loc(f.get("location"))[1]
    stmt = src.statement(line) if line else None
    if stmt is None or line is None or _optimizer_step(src, line):
        return
    tensors = [t for t in (updated_tensor(s) for s in stmt.body) if t]
    if not tensors:
        return
    clears = [parse_stmt(f"{t}.grad.zero_()") for t in dict.fromkeys(tensors)]
    yield ("zero-grad-after-update", line, src.replace(stmt, cst.FlattenSentinel([stmt, *clears])),
           f"{tensors[0]}.grad.zero_() after the update")
