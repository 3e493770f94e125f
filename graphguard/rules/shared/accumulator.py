"""A loss accumulator never reset between two backwards (GG001 rather than GG003).

`loss = 0; for t in tasks: loss += loss_t; loss.backward()` and then, for a second pass,
`loss += loss_t` again without `loss = 0`: the second backward starts from the same variable,
which still holds the first pass's graph underneath. That is a stale tensor carried into a new
loss (GG001, fix: reset it), not two losses that share a subgraph (GG003, fix: sum them or
detach the shared part). Told apart by behaviour plus names: the old part the earlier backward
ran through was made by a statement that grows the very variable this backward starts from.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ...events import BackwardCall
from ...lookup.assigned import name_where_made
from ...lookup.source import statement_at, target_lines
from ...model import Frame, SourceLoc
from ..context import RuleContext
from .stale import StaleAnalysis

__all__ = ["Accumulator", "unreset_accumulator"]


@dataclass(frozen=True)
class Accumulator:
    name: str  # the variable, as written (`loss`)
    made: SourceLoc | None  # the statement that grew it with the old graph (`loss += loss_t`)
    reset: SourceLoc | None  # its last plain assignment before this backward (`loss = 0`)


def _grows(frame: Frame, name: str) -> bool:
    """Whether the statement at `frame` grows `name`: `name += x` or `name = name + x`."""
    stmt = statement_at(frame.file, frame.line)
    if isinstance(stmt, ast.AugAssign):
        return ast.unparse(stmt.target) == name
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and ast.unparse(stmt.targets[0]) == name:
        return any(isinstance(n, (ast.Name, ast.Attribute)) and ast.unparse(n) == name
                   for n in ast.walk(stmt.value))
    return False


def unreset_accumulator(event: BackwardCall, a: StaleAnalysis, ctx: RuleContext) -> Accumulator | None:
    """The accumulator this backward starts from when its stale part is that same variable's old
    graph, grown by an earlier pass and consumed by the earlier backward; else None."""
    if a.kind == "none" or a.marked_boundary < 0 or not event.roots or event.scan is None:
        return None
    root_hit = ctx.name_of(event.roots[0])
    if root_hit is None:
        return None
    node = event.scan.nodes[a.marked_boundary]
    st = ctx.stamp(node)
    if st is None or not st.site:
        return None
    made = name_where_made(node, st.site)
    if made is None or made[0] != root_hit.name or made[1] is None or not _grows(made[1], made[0]):
        return None
    reset = None
    if event.site:
        bw = event.site[0]
        found = [s for s in target_lines(bw.file, bw.line, made[0]) if s.line < bw.line]
        reset = found[-1] if found else None
    return Accumulator(made[0], ctx.loc((made[1],)), reset)
