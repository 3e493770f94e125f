"""Which light-mode backward calls are *quiet*: the clean iteration the rules already judged.

NOTE [quiet events] in engine.py says why and what the engine does with the answer.
"""
from __future__ import annotations

import weakref
from typing import Any
from operator import is_

import torch

from ..events import BackwardCall

__all__ = ["QuietShapes", "MAX_SHAPES"]

_deref = weakref.ref.__call__  # r -> its referent or None
MAX_SHAPES = 8  # graph shapes remembered as judged (a training loop has one or two)


class QuietShapes:
    """The graph shapes every rule has judged without a finding, and the test that a backward
    call is quiet: nothing in it that some rule would look at, on a shape already judged.

    A shape is the set of node types of the walked graph (GG902's compiled nodes, GG013's
    zero-derivative ops are node types) and its leaves by identity (GG011 judges each leaf once).
    Leaves are held weakly: a shape whose leaves died can never match again.
    """

    __slots__ = ("_shapes",)

    def __init__(self) -> None:
        # (node types, leaf ids, weak references to the leaves)
        self._shapes: list[tuple[frozenset, list[int], list[weakref.ref]]] = []

    def clear(self) -> None:
        """Forget every shape (an optimizer was given parameters: the leaves mean something new)."""
        self._shapes.clear()

    @staticmethod
    def plain(call: BackwardCall, modified_saved: bool) -> bool:
        """Whether nothing in this call asks for a rule, whatever its shape: a plain `backward()`
        of scalar losses with history, on a graph no earlier backward traversed, with no saved
        tensor found changed (`modified_saved`) and no node a backward outside the guard freed."""
        scan = call.scan
        if (call.api != "backward" or call.retain_graph or call.create_graph or call.inputs
                or modified_saved or scan is None or scan.truncated or scan.marked_index
                or getattr(scan, "unmarked_freed", None) is not None):
            return False
        grads = call.gradients
        for i, r in enumerate(call.roots):
            if not isinstance(r, torch.Tensor):
                return False
            if r.grad_fn is None:
                return False  # no history (GG009, GG014), or a leaf as the loss
            if (i >= len(grads) or grads[i] is None) and r.numel() != 1:
                return False  # non-scalar without a gradient (GG012)
        return True

    def judged(self, call: BackwardCall) -> bool:
        """Whether the call's graph has a shape judged before (call `plain` first)."""
        return self.judged_shape(call.scan.types, call.scan.leaves)

    def judged_shape(self, types: set[type], leaves: list[Any]) -> bool:
        """Whether node types `types` (a set: equal to a frozenset of the same types) with these
        leaves, walk order, make a shape judged before."""
        if not self._shapes:
            return False
        ids = list(map(id, leaves))
        for t, i, refs in self._shapes:
            # equal ids are the same leaves only while those leaves live: each reference must
            # still lead to the very leaf met now (one C-level pass, not a Python loop per leaf)
            if i == ids and t == types and all(map(is_, map(_deref, refs), leaves)):
                return True
        return False

    def remember(self, call: BackwardCall) -> None:
        """Every rule judged this plain call and found nothing: its shape is quiet from now on."""
        scan = call.scan
        try:
            refs = [weakref.ref(v) for v in scan.leaves]
        except TypeError:  # a leaf that cannot be weakly referenced: never quiet
            return
        shape = (frozenset(scan.types), list(map(id, scan.leaves)), refs)
        if len(self._shapes) >= MAX_SHAPES:
            del self._shapes[0]
        self._shapes.append(shape)
