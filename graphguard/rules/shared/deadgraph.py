"""Which parts of a backward graph carry no gradient to the optimized parameters.

Used by the rules that judge one term of a loss (GG009: a term whose history was cut and that
re-enters as a fresh leaf; GG013: a term whose only path to the parameters goes through a
zero-derivative op). Computed from the pre-backward scan, only when such a rule is about to fire:
never per op.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["GraphIndex", "index_graph", "upward", "downward", "chain"]


@dataclass
class GraphIndex:
    """The scan's nodes with their edges both ways (walk indices)."""

    nodes: list[Any]
    children: list[list[int]]
    parents: list[list[int]]
    index: dict[int, int]  # id(node) -> walk index


def index_graph(nodes: list[Any]) -> GraphIndex:
    index = {id(n): i for i, n in enumerate(nodes)}
    children: list[list[int]] = [[] for _ in nodes]
    parents: list[list[int]] = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        for nf, _ in getattr(n, "next_functions", ()):
            j = index.get(id(nf)) if nf is not None else None
            if j is not None:
                children[i].append(j)
                parents[j].append(i)
    return GraphIndex(nodes, children, parents, index)


def _spread(starts: list[int], edges: list[list[int]], blocked: set[int]) -> set[int]:
    seen = {i for i in starts if i not in blocked}
    stack = list(seen)
    while stack:
        for j in edges[stack.pop()]:
            if j not in seen and j not in blocked:
                seen.add(j)
                stack.append(j)
    return seen


def upward(g: GraphIndex, starts: list[int], blocked: set[int] | None = None) -> set[int]:
    """Nodes from which one of `starts` is reached (them included), not through `blocked` nodes."""
    return _spread(starts, g.parents, blocked or set())


def downward(g: GraphIndex, start: int, blocked: set[int] | None = None) -> set[int]:
    """Nodes reached from `start` (included) without passing through `blocked` nodes."""
    return _spread([start], g.children, blocked or set())


def chain(g: GraphIndex, start: int, end: int, allowed: Callable[[int], bool] = lambda i: True) -> list[int]:
    """Walk indices on a shortest path from `start` down to `end` (both included; [] if none)."""
    prev = {start: -1}
    queue = [start]
    while queue:
        i = queue.pop(0)
        if i == end:
            break
        for c in g.children[i]:
            if c not in prev and allowed(c):
                prev[c] = i
                queue.append(c)
    if end not in prev:
        return []
    path, i = [], end
    while i != -1:
        path.append(i)
        i = prev[i]
    return path[::-1]
