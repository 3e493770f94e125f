"""A straight-through gate for rows picked by top-k indices (GG008, GG009): `perm = torch.topk(score,
k).indices; x = x[perm]` keeps the k best-scored rows, but the indices carry no gradient, so the
layer that computes `score` never trains.

The rule's fix is soft weights or a straight-through estimator; the patch is the latter, so the
forward pass stays exactly as it was: right after the top-k it builds `gate = 1 + score[perm] -
score[perm].detach()` (exactly 1 in value), and every row selection `Y[perm]` that follows in the
same function is multiplied by it, broadcast over Y's other dimensions. The gradient that reaches
the selected rows then reaches their scores too (the gate's derivative is 1 per row). Selections
along another dimension (`edge_index[:, perm]`, integer index arrays) are left alone.
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Source, dotted, enclosing, parse_expr, parse_stmt
from .copies import cut_lines
from .select import free_name

__all__ = ["topk_gate"]

Candidate = tuple[str, int, str, str]


def _topk(src: Source, value: cst.BaseExpression, unpacked: bool) -> str | None:
    """The score's code when `value` gives top-k indices: `torch.topk(s, k).indices`,
    `torch.topk(s, k)[1]`, `s.topk(k).indices` (or the call itself when it is unpacked into
    `values, indices`); None for a top-k along a dim (the rows would not be the first axis)."""
    call: cst.BaseExpression | None = value if unpacked else None
    if not unpacked:
        if isinstance(value, cst.Attribute) and value.attr.value == "indices":
            call = value.value
        elif isinstance(value, cst.Subscript) and len(value.slice) == 1 \
                and isinstance(value.slice[0].slice, cst.Index) \
                and isinstance(value.slice[0].slice.value, cst.Integer) and value.slice[0].slice.value.value == "1":
            call = value.value
    if not isinstance(call, cst.Call):
        return None
    name = dotted(call.func) or ""
    args = list(call.args)
    if name == "torch.topk" and args and args[0].keyword is None:
        score, rest = src.code(args[0].value).strip(), args[1:]
    elif isinstance(call.func, cst.Attribute) and call.func.attr.value == "topk" and name != "torch.topk":
        score, rest = src.code(call.func.value).strip(), args
    else:
        return None
    positional = [a for a in rest if a.keyword is None]
    keywords = {a.keyword.value for a in rest if a.keyword is not None}
    if len(positional) > 1 or keywords - {"k", "largest", "sorted"}:
        return None
    return score


def _indices_of(src: Source, stmt: cst.SimpleStatementLine) -> tuple[str, str] | None:
    """(the indices' name, the score's code) when `stmt` assigns top-k indices to a name."""
    if len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign) or len(stmt.body[0].targets) != 1:
        return None
    a = stmt.body[0]
    target = a.targets[0].target
    if isinstance(target, cst.Name):
        score = _topk(src, a.value, unpacked=False)
        return (target.value, score) if score else None
    if isinstance(target, cst.Tuple) and len(target.elements) == 2 and isinstance(target.elements[1].value, cst.Name):
        score = _topk(src, a.value, unpacked=True)
        return (target.elements[1].value.value, score) if score else None
    return None


def _row_selection(node: cst.CSTNode, perm: str) -> bool:
    """`Y[perm]`: the indices alone, on the first axis."""
    return isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
        and isinstance(node.slice[0].slice.value, cst.Name) and node.slice[0].slice.value.value == perm


def topk_gate(src: Source, f: dict[str, Any], file: str) -> Iterator[Candidate]:
    """GG008/GG009 cut by top-k indices: the rows they select multiplied by a straight-through
    gate of their scores (forward values unchanged)."""
    for line in cut_lines(f):
        stmt = src.statement(line)
        found = _indices_of(src, stmt) if stmt is not None else None
        if stmt is None or found is None:
            continue
        perm, score = found
        fn = enclosing(src, stmt, cst.FunctionDef)
        picks = [n for n in src.nodes(cst.Subscript) if src.start(n) > src.start(stmt) and _row_selection(n, perm)
                 and enclosing(src, n, cst.FunctionDef) is fn and src.code(n.value).strip() != score]
        if not picks:
            continue
        gate = free_name(src, "gate")

        class Gate(cst.CSTTransformer):
            def leave_Subscript(self, o: cst.Subscript, u: cst.Subscript) -> cst.BaseExpression:
                if not any(o is p for p in picks):
                    return u
                rows = src.code(o.value).strip()
                return parse_expr(f"({src.code(o).strip()} * {gate}.reshape((-1,) + (1,) * ({rows}.dim() - 1)))")

            def leave_SimpleStatementLine(self, o: cst.SimpleStatementLine, u: cst.SimpleStatementLine) -> Any:
                if o is stmt:
                    made = parse_stmt(f"{gate} = 1 + {score}[{perm}] - {score}[{perm}].detach()")
                    return cst.FlattenSentinel([u, made])
                return u

        yield ("topk-gate", src.start(stmt), src.module.visit(Gate()).code,
               f"rows picked by {perm} gated by their scores (straight-through)")
