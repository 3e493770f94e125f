"""The graph scan made before each backward: which nodes are stale, consumed, or retained."""
from __future__ import annotations

from typing import Any

import torch

from .graph import Walk, is_freed, walk
from .state import Mark, Stamp

__all__ = ["Stamp", "Mark", "GraphScan", "scan_graph"]

_BackwardCFunction = torch.autograd.function.BackwardCFunction  # custom Functions' nodes
# the node type that writes .grad of a leaf (its `variable`), looked up once
_AccumulateGrad = type(torch.empty(0, requires_grad=True).view(-1).grad_fn.next_functions[0][0])


class GraphScan:
    """What a pre-backward walk found. Holds node wrappers: drop it when the backward is done."""

    def __init__(self, w: Walk, stamp_key: str, mark_key: str) -> None:
        self.walk = w
        self.stamps: list[Stamp | None] = []
        self.marks: list[Mark | None] = []
        self.leaves: list[torch.Tensor] = []  # leaves reached (AccumulateGrad variables)
        # Leaves fed to a custom autograd.Function: it may need them to require grad (a
        # reentrant checkpoint recomputes its forward with grad only then), so never "needless".
        self.function_inputs: list[torch.Tensor] = []
        self.leaf_index: set[int] = set()  # walk indices of the AccumulateGrad nodes
        # walk indices of the other nodes an earlier backward traversed (usually none: scanning
        # `marks` for them in every rule would cost a pass over the graph each)
        self.marked_index: list[int] = []
        # This loop runs for every node before every backward: locals, no per-node calls beyond
        # the metadata reads, and the leaf test by type (a name comparison costs 3x more).
        custom = _BackwardCFunction
        stamps, marks, leaves = self.stamps, self.marks, self.leaves
        leaf_index, marked_index = self.leaf_index, self.marked_index
        nodes, parent = w.nodes, w.parent
        for i, node in enumerate(nodes):
            md = node.metadata
            if md:
                stamps.append(md.get(stamp_key))
                mark = md.get(mark_key)
            else:  # nothing recorded (light mode, or made before the guard)
                stamps.append(None)
                mark = None
            marks.append(mark)
            if type(node) is _AccumulateGrad:
                leaf_index.add(i)
                leaf = node.variable
                if leaf is not None:
                    leaves.append(leaf)
                    par = parent[i]
                    if par >= 0 and isinstance(nodes[par], custom):
                        self.function_inputs.append(leaf)
            elif mark is not None:
                marked_index.append(i)
        self._freed: dict[int, bool] = {}

    @property
    def nodes(self) -> list[Any]:
        return self.walk.nodes

    @property
    def truncated(self) -> bool:
        return self.walk.truncated

    def marked(self, freed_only: bool = False) -> list[int]:
        """Indices of nodes an earlier backward traversed (only those whose buffers it freed)."""
        return [i for i, m in enumerate(self.marks)
                if m is not None and (not freed_only or not m.retained)]

    def freed(self, i: int) -> bool:
        """Whether node i's saved tensors are gone (cached; reading them costs ~15 us)."""
        if i not in self._freed:
            m = self.marks[i]
            self._freed[i] = m is not None and not m.retained and is_freed(self.walk.nodes[i])
        return self._freed[i]

    def boundary(self, members: set[int]) -> list[int]:
        """Members whose walk parent is not a member: where the old part joins the new one."""
        par = self.walk.parent
        return [i for i in sorted(members) if par[i] == -1 or par[i] not in members]

    def region_below(self, start: int) -> set[int]:
        """Indices reachable from node `start` within the walk (its part of the graph)."""
        children: dict[int, list[int]] = {}
        for i, p in enumerate(self.walk.parent):
            if p >= 0:
                children.setdefault(p, []).append(i)
        out, stack = {start}, [start]
        while stack:
            for c in children.get(stack.pop(), ()):
                if c not in out:
                    out.add(c)
                    stack.append(c)
        return out


def scan_graph(roots: list[torch.Tensor], stamp_key: str, mark_key: str, limit: int) -> GraphScan:
    """Walk the graph behind `roots` and read graphguard's stamps and marks."""
    fns = [t.grad_fn for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    return GraphScan(walk(fns, limit), stamp_key, mark_key)
