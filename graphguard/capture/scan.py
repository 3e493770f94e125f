"""The graph scan made before each backward: which nodes are stale, consumed, or retained."""
from __future__ import annotations

import operator
from itertools import repeat
from typing import Any

import torch

from .graph import Walk, is_freed, saved_attrs
from .marks import SequenceMarks, sequence_now
from . import saved as _saved_module
from .saved import FREED_MESSAGE, SavedCheck, tensor_attrs
from .state import Mark, Stamp

__all__ = ["Stamp", "Mark", "GraphScan", "scan_graph", "LeanScan", "lean_scan", "saved_freed", "sequence_now", "FREED_MESSAGE"]

_NEVER_FRESH = 1 << 65  # above every sequence number (AccumulateGrad's is 2**64 - 1): read every node
MAX_CONFIRM_READS = 64  # candidates of one range read for freed buffers (NOTE in capture/marks.py)
MAX_UNMARKED_READS = 4096  # unrecorded old nodes read for freed buffers before a backward
_BackwardCFunction = torch.autograd.function.BackwardCFunction  # custom Functions' nodes
# the node type that writes .grad of a leaf (its `variable`), looked up once
_AccumulateGrad = type(torch.empty(0, requires_grad=True).view(-1).grad_fn.next_functions[0][0])
_READERS = _saved_module.READERS  # node type -> one call reading its saved tensors (or None)


class GraphScan:
    """What a pre-backward walk found. Holds node wrappers: drop it when the backward is done.

    NOTE [sparse reads]: in light mode most nodes are fresh (made since the last backward) and
    are read for their number only. The nodes that were read for their stamp, mark and metadata
    are kept sparsely (`read`, with `read_md`, `read_stamps`, `read_marks` beside it); the dense
    per-node lists the rules index by walk index (`stamps`, `marks`, `metadata`, `fresh`) are
    built on first use. A skimmed iteration never builds them: three appends per fresh node were
    a quarter of the walk's bytecode on the ellipse loop.
    """

    def __init__(self, roots: list[Any], stamp_key: str, mark_key: str, limit: int,
                 fresh_from: int | None = None, seq_marks: SequenceMarks | None = None,
                 saved: SavedCheck | None = None) -> None:
        self.walk = Walk(lazy_parents=True)
        # the nodes read for stamp and mark (old nodes and leaves), walk order, and what was read
        self.read: list[int] = []
        self.read_md: list[dict | None] = []  # each one's metadata dict (the marks go there)
        self.read_stamps: list[Stamp | None] = []
        self.read_marks: list[Mark | None] = []  # the marks found in the metadata
        self.leaves: list[torch.Tensor] = []  # leaves reached (AccumulateGrad variables)
        # Leaves fed to a custom autograd.Function: it may need them to require grad (a
        # reentrant checkpoint recomputes its forward with grad only then), so never "needless".
        self.function_inputs: list[torch.Tensor] = []
        self.leaf_index: set[int] = set()  # walk indices of the AccumulateGrad nodes
        # walk indices of the other nodes an earlier backward traversed (usually none: scanning
        # `marks` for them in every rule would cost a pass over the graph each)
        self.marked_index: list[int] = []
        self.types: set[type] = set()  # the node types met (the quiet test's shape, capture/quiet.py)
        # the range of the fresh nodes' sequence numbers (-1, -1: none)
        self.fresh_lo = self.fresh_hi = -1
        self.fast = fresh_from is not None
        self.counter: int | None = None  # the sequence counter before the walk (scan_graph)
        self.range_mark: Mark | None = None  # this backward's Mark kept by range (guard.py)
        self._dense: dict[str, list] = {}  # the dense lists, once built
        self._scan(roots, stamp_key, mark_key, limit,
                   _NEVER_FRESH if fresh_from is None else fresh_from, seq_marks, saved)
        self._freed: dict[int, bool] = {}
        # (freed node, topmost node made before the guard above it): a graph consumed by a
        # backward the guard never saw; set by the guard before the rules judge the call
        self.unmarked_freed: tuple[int, int] | None = None

    def _scan(self, roots: list[Any], stamp_key: str, mark_key: str, limit: int,
              fresh_from: int, seq_marks: SequenceMarks | None, saved: SavedCheck | None) -> None:
        """Walk the graph breadth-first and read each node as it goes. A node made since the last
        backward (sequence number >= `fresh_from`, light mode only) is read for its number only,
        and, with `saved`, for its saved values (the in-place check, capture/saved.py: here, while
        the node is at hand, instead of in a second pass); any other node for its stamp and
        mark, and if it has no mark in its metadata, its number is looked up among the
        range-marked backwards (confirmed below).

        One loop: this runs for every node before every backward, right after the forward has
        flushed the caches, so every pass over the nodes counts (a walk, then a scan, then a pass
        for the types cost 20-30% more on a 250-node graph). Locals, no per-node calls beyond
        the reads, the leaf test by type (a name comparison costs 3x more). `nodes` is the queue
        itself: node i's children are appended behind it (breadth-first without a tuple per
        node). `seen` holds the node wrappers themselves (they hash by identity; PyTorch hands
        out one wrapper per node while it lives), and None, so one membership test per edge
        covers both."""
        w = self.walk
        custom, acc = _BackwardCFunction, _AccumulateGrad
        read, read_md, read_stamps, read_marks = self.read, self.read_md, self.read_stamps, self.read_marks
        leaves, leaf_index, marked_index, types = self.leaves, self.leaf_index, self.marked_index, self.types
        nodes = w.nodes
        seen: set[Any] = {None}
        for r in roots:
            if r not in seen:
                seen.add(r)
                nodes.append(r)
        w.roots = len(nodes)
        add = seen.add
        fast = fresh_from < _NEVER_FRESH
        find = seq_marks.range_of if seq_marks else None
        readers = _READERS
        check = saved is not None
        careful = check and saved.careful  # NOTE [saved values behind other hooks]
        candidates: list[tuple[int, int]] = []  # (walk index, range index)
        seqs: list[int] = []  # the fresh nodes' numbers (their range is this backward's mark)
        # A for loop over the growing queue visits the appended nodes too (the list iterator
        # re-reads the length at each step); zip with range(limit) stops it after `limit` nodes,
        # with no test of its own per node. Nodes queued beyond it are dropped below.
        for i, node in zip(range(limit), nodes):
            t = type(node)
            if t is acc:
                md = node.metadata  # a leaf's accumulator lives across iterations: marks stay on it
                read.append(i)
                read_md.append(md)
                read_stamps.append(md.get(stamp_key) if md else None)
                read_marks.append(md.get(mark_key) if md else None)
                leaf_index.add(i)
                leaf = node.variable
                if leaf is not None:
                    leaves.append(leaf)
                continue
            if fast:
                try:
                    seq = node._sequence_nr()
                except Exception:  # a node type without a number: read it as an old one
                    seq = -1
            else:
                seq = -1  # recording: every node is read
            if seq >= fresh_from:
                seqs.append(seq)
                if check:
                    reader = readers[t]
                    if reader is not None and not (careful and saved.hooked(node)):
                        try:
                            reader(node)
                        except RuntimeError:  # one of them changed or freed: which one?
                            for attr in tensor_attrs(node):
                                try:
                                    getattr(node, attr)
                                except RuntimeError as err:
                                    if saved.failed(i, node, attr, err):
                                        check = not saved.stopped
                                        break
            else:
                md = node.metadata
                read.append(i)
                read_md.append(md)
                if md:
                    read_stamps.append(md.get(stamp_key))
                    mark = md.get(mark_key)
                else:
                    read_stamps.append(None)
                    mark = None
                if mark is None and find is not None and seq >= 0:
                    r = find(seq)
                    if r >= 0:
                        candidates.append((i, r))
                read_marks.append(mark)
                if mark is not None:
                    marked_index.append(i)
            for nxt, _ in node.next_functions:
                if nxt not in seen:
                    add(nxt)
                    nodes.append(nxt)
        # (no parent list here: one append per node was ~10% of this loop; Walk.parent builds
        # it from the nodes on first use)
        if len(nodes) > limit:  # the limit stopped the walk: what it queued but never read goes
            w.truncated = True
            del nodes[limit:]
        types.update(map(type, nodes))
        if any(map(issubclass, types, repeat(custom))):
            # leaves fed to a custom Function (rare: checked by type, after the walk)
            inputs = self.function_inputs
            for node in nodes:
                if isinstance(node, custom):
                    for nxt, _ in node.next_functions:
                        if type(nxt) is acc and nxt.variable is not None:
                            inputs.append(nxt.variable)
        if seqs:
            self.fresh_lo, self.fresh_hi = min(seqs), max(seqs)
        if candidates:
            self._confirm(candidates, seq_marks)

    # ---- the dense per-node lists (NOTE [sparse reads]) ------------------------------------------
    def _densify(self, name: str, sparse: list) -> list:
        out = self._dense.get(name)
        if out is None:
            n = len(self.walk.nodes)
            if len(self.read) == n:  # every node was read, in walk order: the list is dense
                out = sparse
            else:
                out = [None] * n
                for i, v in zip(self.read, sparse):
                    out[i] = v
            self._dense[name] = out
        return out

    @property
    def stamps(self) -> list[Stamp | None]:
        """Each walked node's stamp (None for a fresh node and an unrecorded one)."""
        return self._densify("stamps", self.read_stamps)

    @property
    def marks(self) -> list[Mark | None]:
        """Each walked node's mark: the last backward of this guard that traversed it, or None."""
        return self._densify("marks", self.read_marks)

    @property
    def metadata(self) -> list[dict | None]:
        """Each walked node's metadata dict as the scan read it (None for a fresh node)."""
        return self._densify("metadata", self.read_md)

    @property
    def has_fresh(self) -> bool:
        """Whether some node was made since the last backward (read for its number only)."""
        return len(self.read) < len(self.walk.nodes)

    @property
    def fresh(self) -> list[int]:
        """Walk indices of the fresh nodes."""
        got = set(self.read)
        return [i for i in range(len(self.walk.nodes)) if i not in got]

    def read_fresh(self) -> None:
        """Read the fresh nodes' metadata too (a retained graph gets exact marks on each node):
        they join `read` with no stamp and no mark."""
        nodes = self.walk.nodes
        for i in self.fresh:
            self.read.append(i)
            self.read_md.append(nodes[i].metadata)
            self.read_stamps.append(None)
            self.read_marks.append(None)
        self._dense.clear()

    def _confirm(self, candidates: list[tuple[int, int]], seq_marks: SequenceMarks) -> None:
        """Old nodes whose number lies in a range-marked backward's range: that backward ran
        through them if one of them (of the same range) has its saved tensors freed; then each
        gets the backward's Mark, as if it had been written on it."""
        by_range: dict[int, list[int]] = {}
        for i, r in candidates:
            by_range.setdefault(r, []).append(i)
        nodes, marks = self.walk.nodes, self.marks  # (the dense list: built here, rarely)
        added = False
        for r, members in by_range.items():
            if any(is_freed(nodes[i]) for i in members[:MAX_CONFIRM_READS]):
                m = seq_marks.mark_at(r)
                for i in members:
                    marks[i] = m
                    self.marked_index.append(i)
                added = True
        if added:
            self.marked_index.sort()  # walk order, as the rules expect

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

    def find_unmarked_freed(self, born_before: int, limit: int = MAX_UNMARKED_READS) -> int:
        """The first walked node (breadth-first) made before `born_before` (an autograd sequence
        number: the guard's entry) that no backward of this guard traversed and whose saved
        buffers are freed: a backward before the guard (or outside it) consumed it, so running it
        again raises. -1 when none. Only unrecorded nodes are read (none in a graph built inside
        the guard), at most `limit` of them. Run only while recording: in light mode no node
        carries a stamp, and the pre-backward saved-value read finds freed nodes instead."""
        nodes, stamps, marks = self.walk.nodes, self.stamps, self.marks
        reads = 0
        for i, node in enumerate(nodes):
            if stamps[i] is not None or marks[i] is not None:
                continue  # made by a recorded op, or traversed by a backward of this guard
            try:
                if node._sequence_nr() >= born_before:  # AccumulateGrad: the largest number
                    continue
            except Exception:  # a node type without one: not ours to judge
                continue
            if saved_freed(node):
                return i
            reads += 1
            if reads >= limit:
                break
        return -1

    def old_top(self, i: int, born_before: int) -> int:
        """From walk index `i` up its walk parents, the topmost node made before `born_before`
        that no backward of this guard traversed: where the old graph joins the new one (the
        root itself when the whole graph predates the guard)."""
        nodes, par, marks = self.walk.nodes, self.walk.parent, self.marks
        j = i
        while par[j] >= 0 and marks[par[j]] is None:
            try:
                if nodes[par[j]]._sequence_nr() >= born_before:
                    break
            except Exception:
                break
            j = par[j]
        return j

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


def saved_freed(node: Any) -> bool:
    """Whether reading a saved value of `node` fails because a backward freed it (PyTorch's own
    message says so: no other read error counts)."""
    for name in saved_attrs(node):
        try:
            getattr(node, name)
        except RuntimeError as err:
            if FREED_MESSAGE in str(err):
                return True
        except Exception:  # a value torch cannot convert; not a freed buffer
            continue
    if isinstance(node, _BackwardCFunction):
        try:
            node.saved_tensors
        except RuntimeError as err:
            return FREED_MESSAGE in str(err)
        except Exception:
            pass
    return False


def scan_graph(roots: list[torch.Tensor], stamp_key: str, mark_key: str, limit: int,
               fresh_from: int | None = None, seq_marks: SequenceMarks | None = None,
               saved: SavedCheck | None = None) -> GraphScan:
    """Walk the graph behind `roots` and read graphguard's stamps and marks. With `fresh_from`
    (light mode), nodes numbered from it on are not read (NOTE [marks by sequence number]).
    With `saved` (light mode's in-place check), every node's saved values are read too, except
    those of nodes an earlier backward of this guard freed."""
    counter = sequence_now()  # every node of this graph has a smaller number
    fns = [t.grad_fn for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    scan = GraphScan(fns, stamp_key, mark_key, limit, fresh_from, seq_marks, saved)
    scan.counter = counter
    if saved is not None and not saved.stopped:
        # the nodes not read during the walk: those made before the last backward, except the
        # leaves (no saved values) and the ones a backward freed (marks known only now, after
        # the range marks were confirmed)
        leafy = scan.leaf_index
        if scan.marked_index:
            marks = scan.marks
            todo = [i for i in scan.read
                    if i not in leafy and (marks[i] is None or marks[i].retained)]
        else:
            todo = [i for i in scan.read if i not in leafy]
        if todo:
            saved.read(scan.walk.nodes, todo)
    return scan


class LeanScan:
    """What the lean walk found (NOTE [lean backwards] in backward_check.py): a graph of fresh nodes and
    leaves only, every saved value intact. Holds no node: the leaves' metadata dicts, the leaves
    themselves, the node types and the range of sequence numbers."""

    __slots__ = ("leaf_md", "leaves", "types", "lo", "hi", "counter")

    def __init__(self, leaf_md: list[dict], leaves: list[torch.Tensor], types: set[type],
                 lo: int, hi: int, counter: int) -> None:
        self.leaf_md = leaf_md  # each AccumulateGrad's metadata (its mark goes there)
        self.leaves = leaves  # the leaves reached, walk order
        self.types = types  # the node types met (the quiet test's shape)
        self.lo, self.hi = lo, hi  # the fresh nodes' sequence numbers (-1, -1: none)
        self.counter = counter  # the sequence counter before the walk


def lean_scan(fn: Any, limit: int, fresh_from: int) -> LeanScan | None:
    """Light mode's walk for a plain backward in a skimmed iteration: the graph behind `fn`,
    each node made since the last backward (number >= `fresh_from`) read for its saved values
    (PyTorch's version check, as GraphScan does). None as soon as anything asks for the full
    scan: a node older than that which is not a leaf (a kept graph, carried state), a saved
    value that fails its read (changed in place, or freed), a custom Function (its inputs are
    marked used), a graph larger than `limit`. Then nothing was changed: the full scan reads
    it all again and the rules judge it."""
    counter = sequence_now()
    acc, readers = _AccumulateGrad, _READERS
    nodes = [fn]
    seen: set[Any] = {None, fn}
    add = seen.add
    accs: list[Any] = []
    lo = hi = -1
    for _, node in zip(range(limit), nodes):  # (the queue grows as it is read: see _scan)
        t = type(node)
        if t is acc:
            accs.append(node)
            continue
        try:
            seq = node._sequence_nr()
        except Exception:
            return None
        if seq < fresh_from:
            return None
        if seq > hi:
            hi = seq
        if seq < lo or lo < 0:
            lo = seq
        reader = readers[t]
        if reader is not None:
            try:
                reader(node)
            except RuntimeError:
                return None
        for nxt, _ in node.next_functions:
            if nxt not in seen:
                add(nxt)
                nodes.append(nxt)
    if len(nodes) > limit:
        return None
    return _lean_result(set(map(type, nodes)), accs, lo, hi, counter)


def _lean_result(types: set[type], accs: list[Any], lo: int, hi: int, counter: int) -> LeanScan | None:
    if any(map(issubclass, types, repeat(_BackwardCFunction))):
        return None
    leaf_md = [a.metadata for a in accs]
    leaves = [v for v in map(_variable, accs) if v is not None]
    return LeanScan(leaf_md, leaves, types, lo, hi, counter)


_variable = operator.attrgetter("variable")
