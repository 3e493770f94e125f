"""Diagram snapshots: the offending part of an autograd graph as plain data (no torch, no node).

Built by capture/snapshot.py while the graph is alive, drawn by report/dot.py later."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from .findings import Site, SourceLoc

__all__ = ["SnapNode", "GraphSnapshot", "call_node", "site_locs", "ROLES", "MAX_SNAPSHOT_NODES",
           "TORCHVIZ_MAX", "SHARED_FANOUT"]

MAX_SNAPSHOT_NODES = 300  # a diagram stays readable (and graphviz fast) below a few hundred nodes
TORCHVIZ_MAX = 300  # whole graphs up to this size are drawn by torchviz's make_dot
SHARED_FANOUT = 6  # a node used by more consumers than this is "shared" (layout: report/dot.py)
# Roles, most specific first: a node with several roles is filled by the first one it has.
ROLES = ("freed", "modified", "cut", "no-grad", "target", "stale", "held", "root")


@dataclass
class SnapNode:
    """One node of the drawn graph."""

    id: str  # stable within the snapshot: `n{walk index}` for graph nodes
    op: str  # node type (`MulBackward0`, `AccumulateGrad`), or what a call/cut does
    roles: list[str] = field(default_factory=list)  # see ROLES
    label: str | None = None  # the user's name for it, when it has one
    where: SourceLoc | None = None  # where it was created (innermost user frame)
    iteration: int | None = None
    kind: str = "node"  # node (backward node) | tensor (leaf, or op "output") | call | gap
    detail: str = ""  # tensor summary (`f32[128, 128]`), or what a gap elides
    called_from: SourceLoc | None = None  # outermost user frame, when a helper made the node
    tv_id: str | None = None  # its node id in GraphSnapshot.torchviz, when make_dot drew it


@dataclass(eq=False)  # identity semantics: snapshots are cache keys for rendered SVG
class GraphSnapshot:
    """Nodes and edges (input -> consumer, the direction data flows) of the offending part."""

    nodes: dict[str, SnapNode] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    elided: int = 0  # nodes left out to keep the picture readable
    title: str = ""
    legend: dict[str, str] = field(default_factory=dict)  # role -> what it means in this finding
    links: list[tuple[str, str, str]] = field(default_factory=list)  # dashed (src, dst, label)
    total: int = 0  # nodes in the graph as walked
    truncated: bool = False  # the walk itself stopped at its bound: the graph is larger still
    torchviz: list[str] | None = None  # make_dot's DOT statements, when it drew the whole graph

    def add(self, node: SnapNode) -> SnapNode:
        self.nodes[node.id] = node
        return node

    def link(self, src: str, dst: str, label: str = "") -> None:
        """A dashed edge: an entry point, an elided stretch, a path that the gradient cannot take."""
        if src in self.nodes and dst in self.nodes:
            self.links.append((src, dst, label))

    def walk_id(self, index: int) -> str | None:
        """The id of walk node `index`, or None when the pruning left it out."""
        key = f"n{index}"
        return key if key in self.nodes else None

    def offenders(self) -> list[SnapNode]:
        return [n for n in self.nodes.values() if any(r != "root" for r in n.roles)]


def call_node(node_id: str, op: str, where: SourceLoc | None, iteration: int | None = None,
              roles: Iterable[str] = ()) -> SnapNode:
    """An entry point drawn with the graph: a backward call, a loss call, `optimizer.step()`."""
    return SnapNode(node_id, op, list(roles), None, where, iteration, kind="call")


def site_locs(site: Site | None) -> tuple[SourceLoc | None, SourceLoc | None]:
    """Innermost user line, and the line that called the helper function that made the node
    (`apply_ellipse_mask` at line 13, called at line 21 where the result gets its name)."""
    if not site:
        return None, None
    inner = SourceLoc.from_frame(site[0])
    if len(site) > 1 and (site[1].file, site[1].function) != (site[0].file, site[0].function):
        return inner, SourceLoc.from_frame(site[1])
    return inner, None
