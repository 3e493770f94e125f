"""A straight-through gate for a hard boolean selection (GG008, GG009): `x[x > t]` keeps the
elements above `t`, but `t` only decides which ones, so it gets no gradient.

The patch keeps the selection exactly as it was (same elements, same values) and multiplies the
selected values by `1 + s - s.detach()`, where `s = sigmoid(x - t)` is a smooth version of the
comparison: the factor is 1 in the forward pass and carries the sigmoid's gradient back to both
sides of the comparison. A mask over the leading dimensions (`X[X.norm(dim=1) < t]`, rows) is
broadcast over the remaining ones.
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Source, dotted, paren, parse_stmt
from .copies import Rewrite, cut_lines

__all__ = ["gate_selection"]

Candidate = tuple[str, int, str, str]


def _hi_lo(comp: cst.Comparison) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    if len(comp.comparisons) != 1:
        return None
    op = comp.comparisons[0].operator
    left, right = comp.left, comp.comparisons[0].comparator
    if isinstance(op, (cst.GreaterThan, cst.GreaterThanEqual)):
        return left, right
    if isinstance(op, (cst.LessThan, cst.LessThanEqual)):
        return right, left
    return None


def _free(src: Source, base: str) -> str:
    used = {n.value for n in src.nodes(cst.Name)}
    k, name = 0, base
    while name in used:
        k += 1
        name = f"{base}{k}"
    return name


free_name = _free  # a name no line of the file uses yet (topk_gate.py's gate too)


def gate_selection(src: Source, f: dict[str, Any], file: str) -> Iterator[Candidate]:
    """GG008/GG009: `x[a > b]` at the finding's cut line keeps its elements, times a
    straight-through gate built from sigmoid(a - b)."""
    done: set[int] = set()
    for line in cut_lines(f):
        stmt = src.statement(line)
        if stmt is None or not isinstance(src.parent.get(stmt), (cst.IndentedBlock, cst.Module)):
            continue
        for sub in src.nodes(cst.Subscript, line):
            if id(sub) in done or src.statement(src.start(sub)) is not stmt or len(sub.slice) != 1:
                continue
            done.add(id(sub))
            index = sub.slice[0].slice
            if not isinstance(index, cst.Index) or not isinstance(index.value, cst.Comparison) \
                    or dotted(sub.value) is None:  # the selected tensor is read twice: a name only
                continue
            pair = _hi_lo(index.value)
            if pair is None:
                continue
            hi, lo = (src.code(e).strip() for e in pair)
            x = src.code(sub.value).strip()
            mask, soft, gate = _free(src, "_mask"), _free(src, "_soft"), _free(src, "_gate")
            cmp_text = src.code(index.value.with_changes(lpar=[], rpar=[])).strip()
            new_sub = cst.parse_expression(
                f"({x} * {gate}.reshape({gate}.shape + (1,) * ({x}.dim() - {gate}.dim())))[{mask}]")
            before = [parse_stmt(f"{mask} = {cmp_text}"), parse_stmt(f"{soft} = torch.sigmoid({hi} - {paren(lo)})"),
                      parse_stmt(f"{gate} = 1 + {soft} - {soft}.detach()")]

            def put(u: cst.SimpleStatementLine, before: list[Any] = before) -> Any:
                first = before[0].with_changes(leading_lines=u.leading_lines)
                return cst.FlattenSentinel([first, *before[1:], u.with_changes(leading_lines=[])])

            text = src.module.visit(Rewrite({id(sub): lambda u, n=new_sub: n.with_changes(lpar=u.lpar, rpar=u.rpar),
                                             id(stmt): put})).code
            yield ("gate-selection", line, text,
                   "the same selection, times a straight-through sigmoid gate (1 in the forward pass)")
