"""Read the tensor itself where another use of the cut value drops its history (GG008, GG009).

The finding names one op that cut the parameters off (`predicted = outputs.argmax(-1)`), but the
same value often reaches the loss along another path too (`logits.append(outputs)` ...
`torch.stack(logits, 1).data`): when that path drops the history with `.data`, the
argmax was never the only cut. `.data` is no op, so no cut-by names it. The values the cut op
read are followed through the function (assignments, `for` targets, `list.append`, in any order
since the function may loop), and each `.data` on them is a candidate, the nearest after the cut
first.
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Source, enclosing, loc, related
from .roundtrip import names_read, statement_reads, assigned_names, statement_at

__all__ = ["keep_history_downstream"]

Candidate = tuple[str, int, str, str]
_MAX = 2  # candidates per cut: verification runs are few


def _appends(stmt: cst.CSTNode) -> set[str]:
    out: set[str] = set()
    for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                and isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value in ("append", "extend") \
                and isinstance(small.value.func.value, cst.Name):
            out.add(small.value.func.value.value)
    return out


def keep_history_downstream(src: Source, f: dict[str, Any], file: str) -> Iterator[Candidate]:
    """GG008/GG009: `.data` on another use of the value the finding's cut op read. (Not
    `.detach()`: it is a recorded op, so a `.detach()` on the loss's path is a cut-by of its own.)"""
    seen: set[int] = set()
    for r in related(f, "cut-by"):
        line = loc(r.get("location"))[1]
        cut = statement_at(src, line) if line else None
        if cut is None or not isinstance(cut, cst.SimpleStatementLine):
            continue
        fn = enclosing(src, cut, cst.FunctionDef)
        tainted = statement_reads(cut) - assigned_names(cut)
        stmts = [s for s in src.nodes((cst.SimpleStatementLine, cst.For))
                 if s is not cut and enclosing(src, s, cst.FunctionDef) is fn]
        hit: list[cst.CSTNode] = []
        grew = True
        while grew:  # to a fixpoint: a loop body may feed what an earlier line reads
            grew = False
            for s in stmts:
                if s in hit or not statement_reads(s) & tainted:
                    continue
                hit.append(s)
                more = (assigned_names(s) | _appends(s)) - tainted
                if more:
                    tainted |= more
                    grew = True
        hit.sort(key=lambda s: (src.start(s) < src.start(cut), abs(src.start(s) - src.start(cut))))
        found = 0
        for s in hit:
            if not isinstance(s, cst.SimpleStatementLine):
                continue
            for node in src.nodes((cst.Attribute, cst.Call), src.start(s)):
                if id(node) in seen or src.statement(src.start(node)) is not s or found >= _MAX:
                    continue
                if isinstance(node, cst.Attribute) and node.attr.value == "data" \
                        and not isinstance(src.parent.get(node), (cst.AssignTarget, cst.Attribute)) \
                        and names_read(node.value) & tainted:
                    seen.add(id(node))
                    found += 1
                    yield ("keep-history", src.start(s), src.replace(node, node.value), "the tensor instead of its .data")
