"""A loss accumulator never reset between two backwards (GG001 rather than GG003).

`loss = 0; for t in tasks: loss += loss_t; loss.backward()` and then, for a second pass,
`loss += loss_t` again without `loss = 0`: the second backward starts from the same variable,
which still holds the first pass's graph underneath. That is a stale tensor carried into a new
loss (GG001, fix: reset it), not two losses that share a subgraph (GG003, fix: sum them or
detach the shared part).

Decided from the run alone (`carried_loss`, a fact of the family's classifier in stale.py): this graph holds the very node the earlier backward
started from, and was built after that backward, so the whole earlier loss was carried into this
one. Two losses sharing a trunk hold only nodes below their roots; two losses built together
before either backward (`loss = a + b; a.backward(); loss.backward()`) are GG003's too. How the
source spells the accumulator (`loss += t`, `loss = loss + t`, `loss.add_(t)`, a helper, a dict
entry) only words the finding (`unreset_accumulator`): its name, the line that grew it, the
reset to add.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...events import BackwardCall
from ...lookup.assigned import name_where_made
from ...lookup.source import statement_at, target_lines
from ...model import Frame, SourceLoc
from ..context import Evidence, RuleContext

if TYPE_CHECKING:  # stale.py's classifier asks carried_loss: its analysis is imported for the types only
    from .stale import StaleAnalysis

__all__ = ["Accumulator", "carried_loss", "unreset_accumulator"]


@dataclass(frozen=True)
class Accumulator:
    name: str  # the variable, as written (`loss`)
    made: SourceLoc | None  # the statement that grew it with the old graph (`loss += loss_t`)
    reset: SourceLoc | None  # its last plain assignment before this backward (`loss = 0`)


def _statement(frame: Frame) -> ast.stmt | None:
    return statement_at(frame.file, frame.line)


def _grown_in_place(stmt: ast.stmt | None) -> str | None:
    """`name.add_(x)` (any in-place method) as a statement of its own: the name it grows."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.startswith("_"):
            return ast.unparse(func.value)
    return None


def _grows(frame: Frame, name: str) -> bool:
    """Whether the statement at `frame` grows `name`: `name += x`, `name = name + x` (any
    expression of it) or `name.add_(x)`."""
    stmt = _statement(frame)
    if _grown_in_place(stmt) == name:
        return True
    if isinstance(stmt, ast.AugAssign):
        return ast.unparse(stmt.target) == name
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and ast.unparse(stmt.targets[0]) == name:
        return any(isinstance(n, (ast.Name, ast.Attribute)) and ast.unparse(n) == name
                   for n in ast.walk(stmt.value))
    return False


def carried_loss(event: BackwardCall, a: "StaleAnalysis", ev: Evidence) -> int | None:
    """The walk index of a node an earlier backward started from, held by this freed graph that
    was built after it (the earlier loss carried into this one: an accumulator never reset, see
    above); else None. One of the facts of the family's classifier (stale.gather). Capture data only: the marks, the backwards' recorded
    roots, the analysis."""
    if a.kind != "freed" or a.built_together or event.scan is None:
        return None
    marks, nodes = event.scan.marks, event.scan.nodes
    for i in sorted(a.members):
        m = marks[i]
        if m is not None and not m.retained and ev.started_backward(nodes[i], m):
            return i
    return None


def unreset_accumulator(event: BackwardCall, a: "StaleAnalysis", ctx: RuleContext,
                        at: int) -> Accumulator | None:
    """How the source spells the loss carried at walk index `at` (see carried_loss) when it is an
    accumulator grown again without a reset: the variable this backward starts from, grown by the
    statement that made the carried node. None when the source does not show that (the finding
    is then worded from the node alone)."""
    if not event.roots or event.scan is None:
        return None
    root_hit = ctx.name_of(event.roots[0])
    if root_hit is None:
        return None
    node = event.scan.nodes[at]
    st = ctx.stamp(node)
    if st is None or not st.site:
        # no creation line recorded (light mode): the variable is still named when this backward
        # starts from the very tensor the earlier one did, grown in place (`loss += t`)
        mark = event.scan.marks[at]
        if mark is None or not ctx.same_root_tensor(event.roots[0], mark):
            return None
        return Accumulator(root_hit.name, None, _reset_before(event, root_hit.name))
    made = name_where_made(node, st.site)
    if made is None and _grown_in_place(_statement(st.site[0])) == root_hit.name:
        made = (root_hit.name, st.site[0])  # `loss.add_(t)`: the op's result is the variable itself
    if made is None or made[0] != root_hit.name or made[1] is None or not _grows(made[1], made[0]):
        return None
    return Accumulator(made[0], ctx.loc((made[1],)), _reset_before(event, made[0]))


def _reset_before(event: BackwardCall, name: str) -> SourceLoc | None:
    """The last plain assignment of `name` above the backward's line (`loss = 0`)."""
    if not event.site:
        return None
    bw = event.site[0]
    found = [s for s in target_lines(bw.file, bw.line, name) if s.line < bw.line]
    return found[-1] if found else None
