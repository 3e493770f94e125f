"""Marks of graph-freeing backwards kept by autograd sequence number, not on each node.

NOTE [marks by sequence number]
A backward marks every node it traverses, so that a later graph that reaches one of them is known
to be stale (GG001/GG003/GG004) and by which backward. Written into `node.metadata`, each mark
costs PyTorch a metadata dict per node, made when the scan first reads it and freed during the
backward (under the GIL, which the engine has to take back for it): on a 156-node transformer
step ~145 us, about a quarter of the light mode's cost. Autograd numbers the nodes of a thread in
the order they are made, and a backward can only traverse nodes made before it. So in light mode:

- the nodes of a graph made since the last backward (`sequence_nr >= fresh_from`) can carry no
  mark and no stamp: the scan reads neither their metadata nor anything else but their number;
- a backward that frees its graph records the range of its fresh nodes' numbers and its Mark here,
  once, instead of writing the Mark into each of them (retained graphs, old nodes and leaves keep
  their marks in metadata, exactly as before);
- a later scan that meets an old node without a metadata mark looks its number up here. A number
  in a range is only a candidate: nodes made in the same window that the backward never reached
  (a generator's graph between two discriminator passes) share the range. It becomes the node's
  Mark once some candidate of that range is found freed (its saved tensors gone: that backward
  did run through it), which is also what makes the graph fail under PyTorch.

What this gives up: a stale part whose nodes save no tensor at all (reused silently, adding its
gradient twice) is no longer told apart from an unrelated graph of the same window when its
backward was range-marked. Nodes made in another thread have numbers of their own counter: they
are read as old nodes (metadata), never as fresh ones.
"""
from __future__ import annotations

import weakref
from array import array
from bisect import bisect_right

import torch

from ..model import Site
from .state import Mark

__all__ = ["SequenceMarks", "BackwardRoots", "sequence_now", "MAX_RANGES"]
MAX_RANGES = 1024  # backwards remembered by range; past it the older half is dropped (see below)

_NEXT_SEQUENCE_NR = getattr(torch._C._autograd, "_get_sequence_nr", None)


def sequence_now() -> int:
    """The autograd sequence number the next node made in this thread gets: nodes made before
    this call have a smaller one. Read from autograd's counter (0.04 us); a torch without that
    call gets it from a node made for the purpose."""
    if _NEXT_SEQUENCE_NR is not None:
        return _NEXT_SEQUENCE_NR()
    with torch._C.DisableTorchFunction(), torch.enable_grad():
        return torch.empty(0, requires_grad=True).view(-1).grad_fn._sequence_nr() + 1


class SequenceMarks:
    """The Marks of range-marked backwards, by the sequence-number range of the nodes they
    traversed (NOTE [marks by sequence number]). Ranges come in increasing, disjoint order.

    Held as machine integers (`array`), not as one Python object per backward: the guard's memory
    stays flat over a long run (40 bytes per backward, at most MAX_RANGES of them). A stale graph
    older than the ranges kept is still found freed by the pre-backward read (GG001), without the
    backward that consumed it.
    """

    __slots__ = ("_lo", "_hi", "_backward", "_iteration", "_site", "_sites", "_site_ids", "_last")

    def __init__(self) -> None:
        self._lo, self._hi = array("q"), array("q")
        self._backward, self._iteration, self._site = array("q"), array("q"), array("q")
        self._sites: list[Site] = []  # the distinct backward sites (a loop has one or two)
        self._site_ids: dict[Site, int] = {}
        self._last: Mark | None = None  # the Mark of the last range added (for `drop`)

    def __len__(self) -> int:
        return len(self._lo)

    def add(self, lo: int, hi: int, mark: Mark) -> None:
        """A backward traversed the fresh nodes numbered lo..hi (inclusive)."""
        if self._hi and lo <= self._hi[-1]:
            return  # not above the last range (cannot happen within one thread): keep them exact
        if len(self._lo) >= MAX_RANGES:
            half = MAX_RANGES // 2
            for a in (self._lo, self._hi, self._backward, self._iteration, self._site):
                del a[:half]
        site = self._site_ids.get(mark.site)
        if site is None:
            if len(self._sites) >= MAX_RANGES:  # a program calling backward from ever new lines
                self._sites.clear()
                self._site_ids.clear()
                for a in (self._lo, self._hi, self._backward, self._iteration, self._site):
                    del a[:]
            site = self._site_ids[mark.site] = len(self._sites)
            self._sites.append(mark.site)
        self._lo.append(lo)
        self._hi.append(hi)
        self._backward.append(mark.backward)
        self._iteration.append(mark.iteration)
        self._site.append(site)
        self._last = mark

    def drop(self, mark: Mark) -> None:
        """Take back the last range if it is `mark`'s (its backward raised before running)."""
        if self._last is mark and self._lo:
            for a in (self._lo, self._hi, self._backward, self._iteration, self._site):
                a.pop()
        self._last = None

    def range_of(self, seq: int) -> int:
        """The index of the range holding `seq`, or -1 (a candidate: see the NOTE)."""
        i = bisect_right(self._lo, seq) - 1
        if i >= 0 and seq <= self._hi[i]:
            return i
        return -1

    def mark_at(self, i: int) -> Mark:
        """The Mark of range `i` (as the backward would have written it on each node)."""
        return Mark(self._backward[i], self._iteration[i], self._sites[self._site[i]], False)

    def find(self, seq: int) -> Mark | None:
        """The Mark of the range holding `seq`, if any (a candidate: see the NOTE)."""
        i = self.range_of(seq)
        return self.mark_at(i) if i >= 0 else None


class BackwardRoots:
    """The nodes each graph-marking backward started from, by sequence number.

    A later graph that holds the very node an earlier backward started from carries that whole
    earlier loss (`loss += loss_t` again after `loss.backward()`, without `loss = 0`): run-time
    evidence that tells an accumulator kept across backwards from two losses that merely share a
    trunk, whatever the variables are called. Numbers, not nodes: nothing is kept alive. A node's
    number is unique within its thread's autograd counter (see NOTE [marks by sequence number]).
    """

    __slots__ = ("_roots", "_tensors")
    # backwards remembered: the loss carried into a later one is that of a recent backward (the
    # pass before, SAM's first step); a flat memory over a long run matters more than older ones
    KEEP = 64

    def __init__(self) -> None:
        self._roots: dict[int, tuple[int, ...]] = {}  # backward index -> its roots' numbers
        # backward index -> its first root tensor, weakly: `loss += t` grows that very tensor in
        # place, so the next backward starting from the same object started from the same variable
        self._tensors: dict[int, weakref.ref] = {}

    def add(self, backward: int, nodes: "list[object]", root: object = None) -> None:
        """Backward number `backward` starts from `nodes` (autograd graph nodes); `root`, its
        first root tensor (kept weakly)."""
        seqs = []
        for n in nodes:
            try:
                seqs.append(n._sequence_nr())  # type: ignore[attr-defined]
            except Exception:  # not a graph node (a custom root): nothing to compare later
                continue
        if len(self._roots) >= self.KEEP:
            oldest = next(iter(self._roots))
            del self._roots[oldest]
            self._tensors.pop(oldest, None)
        self._roots[backward] = tuple(seqs)
        if root is not None:
            try:
                self._tensors[backward] = weakref.ref(root)
            except TypeError:
                pass

    def same_root_tensor(self, backward: int, t: object) -> bool:
        """Whether backward number `backward` started from the tensor object `t` itself."""
        ref = self._tensors.get(backward)
        return ref is not None and t is not None and ref() is t

    def __len__(self) -> int:
        return len(self._roots)

    def started_from(self, backward: int, node: object) -> bool:
        """Whether backward number `backward` started from `node`."""
        seqs = self._roots.get(backward)
        if not seqs:
            return False
        try:
            return node._sequence_nr() in seqs  # type: ignore[attr-defined]
        except Exception:
            return False
