"""A plain-data copy of the offending part of an autograd graph, taken while the graph is alive.

Diagrams are drawn later (report/dot.py) from this copy, so no node is kept alive for them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..records import SourceLoc

__all__ = ["SnapNode", "GraphSnapshot", "snapshot_from_scan", "MAX_SNAPSHOT_NODES"]

MAX_SNAPSHOT_NODES = 300  # a diagram stays readable (and graphviz fast) below a few hundred nodes


@dataclass
class SnapNode:
    """One node of the drawn graph."""

    id: str  # stable within the snapshot
    op: str  # node type (`MulBackward0`, `AccumulateGrad`) or `tensor`
    roles: list[str] = field(default_factory=list)  # stale | freed | cut | modified | no-grad | root
    label: str | None = None  # the user's name for it, when it has one
    where: SourceLoc | None = None  # where it was created
    iteration: int | None = None


@dataclass
class GraphSnapshot:
    """Nodes and edges (child -> parent, as autograd points) of a pruned neighbourhood."""

    nodes: dict[str, SnapNode] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    elided: int = 0  # nodes left out to keep the picture readable
    title: str = ""
    legend: dict[str, str] = field(default_factory=dict)


def snapshot_from_scan(scan: Any, roles: dict[int, list[str]], labels: dict[int, str],
                       title: str = "", limit: int = MAX_SNAPSHOT_NODES) -> GraphSnapshot:
    """Copy the walk around the nodes that have roles: the offenders, their ancestors up to the
    root and a bounded neighbourhood below them."""
    from .sites import loc_of

    parent = scan.walk.parent
    keep: list[int] = []
    kept: set[int] = set()

    def add(i: int) -> None:
        if i not in kept and len(kept) < limit:
            kept.add(i)
            keep.append(i)

    # the path from each offender back to the root: where the offending part joins the new graph
    for i in sorted(roles):
        j = i
        while j >= 0 and len(kept) < limit:
            add(j)
            j = parent[j]
    # then breadth-first order (the walk's order) fills the remaining budget
    for i in range(len(scan.nodes)):
        if len(kept) >= limit:
            break
        if parent[i] in kept or parent[i] == -1:
            add(i)
    snap = GraphSnapshot(title=title, elided=len(scan.nodes) - len(kept))
    for i in keep:
        node = scan.nodes[i]
        st = scan.stamps[i]
        sn = SnapNode(id=f"n{i}", op=type(node).__name__, roles=list(roles.get(i, [])),
                      label=labels.get(i), where=loc_of(st.site) if st else None,
                      iteration=st.iteration if st else None)
        snap.nodes[sn.id] = sn
    for i in keep:
        p = parent[i]
        if p >= 0 and p in kept:
            snap.edges.append((f"n{i}", f"n{p}"))
    return snap
