"""A constant stand-in for a loss in one branch of an `if` (GG009, GG008): the branch guards a
normalization (`if n <= 0: loss = torch.tensor(0.)` / `else: loss = total / n`), and the constant
drops every term the batch had. Compute the loss as the other branch does, without the division by
the guarded count, so the terms keep their history."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, Source, dotted, enclosing, Names
from .regraph import FACTORIES


def _constant(value: cst.BaseExpression) -> bool:
    """`torch.tensor(0, ...)`, `torch.zeros(1).to(device)`, `0.0`: a value made without history."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in ("to", "cuda", "float", "double", "requires_grad_") \
            and not isinstance(value.func.value, cst.Name):
        value = value.func.value
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    return isinstance(value, cst.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1] in FACTORIES


class _Undivide(cst.CSTTransformer):
    """`x / n` -> `x` for the guarded names `n`."""

    def __init__(self, guarded: set[str]) -> None:
        self.guarded = guarded

    def leave_BinaryOperation(self, o: cst.BinaryOperation, u: cst.BinaryOperation) -> cst.BaseExpression:
        if isinstance(u.operator, cst.Divide) and isinstance(u.right, cst.Name) and u.right.value in self.guarded:
            return u.left
        return u


def _assigns(block: cst.BaseSuite) -> dict[str, cst.Assign]:
    out: dict[str, cst.Assign] = {}
    for s in getattr(block, "body", ()):
        if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign) \
                and len(s.body[0].targets) == 1 and dotted(s.body[0].targets[0].target):
            out[dotted(s.body[0].targets[0].target) or ""] = s.body[0]
    return out


def branch_loss(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG009/GG008: the loss's constant stand-in at the fix-at line, in an if/else whose other branch
    computes the same names from the graph: those names computed as the other branch does, its
    division by a count the `if` tests dropped (that is what the constant guarded)."""
    done: list[cst.CSTNode] = []
    for r in related(f, "fix-at"):
        stmt = src.statement(loc(r.get("location"))[1] or 0)
        node = enclosing(src, stmt, cst.If) if stmt is not None else None
        if node is None or any(node is d for d in done) or not isinstance(node.orelse, cst.Else):
            continue
        done.append(node)
        # the constant is on either side: the fix-at may name the branch that computes the loss
        swap: dict[str, cst.Assign] = {}
        for here, there in ((node.body, node.orelse.body), (node.orelse.body, node.body)):
            mine, theirs = _assigns(here), _assigns(there)
            swap = {name: a for name, a in mine.items() if _constant(a.value) and name in theirs
                    and not _constant(theirs[name].value)}
            if swap:
                break
        if not swap:
            continue
        seen = Names()
        node.test.visit(seen)
        undivide = _Undivide(seen.names)
        new_values = {id(a): theirs[name].value.visit(undivide) for name, a in swap.items()}

        class Edit(cst.CSTTransformer):
            def leave_Assign(self, o: cst.Assign, u: cst.Assign) -> cst.Assign:
                return u.with_changes(value=new_values[id(o)]) if id(o) in new_values else u

        yield ("branch-loss", min(src.start(a) for a in swap.values()), src.module.visit(Edit()).code,
               f"{', '.join(swap)} computed as the other branch does")
