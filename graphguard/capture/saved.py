"""Which saved tensors of a graph were changed in place after they were saved (GG005).

The saved-tensor hooks (recorder.pack/unpack) replace PyTorch's own version check. To tie a
modified `Packed` to the node that saved it, read the node's saved values: the unpack hook raises
`SavedTensorModified(packed)` for a modified one. Reading a saved value changes nothing (the
unpacked tensor is a fresh alias; PyTorch re-checks on its own unpack during backward), so the
real backward that follows still raises its usual error when the user goes on.
"""
from __future__ import annotations

import operator
import re
from typing import Any, Callable, NamedTuple

import torch

from .state import InplaceRecord, Packed
from .recorder import SavedTensorModified

__all__ = ["SavedHit", "SavedCheck", "tensor_attrs", "READERS", "find_modified_saved", "modifying_write",
           "storage_key", "shares_saved", "FREED_MESSAGE"]

FREED_MESSAGE = "already been freed"  # PyTorch's error on reading a freed saved value


class SavedHit(NamedTuple):
    """A saved tensor changed in place, and where the graph holds it."""

    index: int  # walk index of the node that saved it
    attr: str  # `_saved_result`, `_saved_self`, `saved_tensors` (custom Function)
    packed: Packed


_TENSOR_ATTRS: dict[type, tuple[str, ...]] = {}


def _attrs_of_type(t: type) -> tuple[str, ...]:
    names = _TENSOR_ATTRS.get(t)
    if names is None:
        attrs = set(dir(t))
        names = tuple(n for n in sorted(attrs) if n.startswith("_saved_") and "_raw" + n in attrs)
        if "saved_tensors" in attrs:  # custom autograd.Function nodes
            names += ("saved_tensors",)
        _TENSOR_ATTRS[t] = names
    return names


def tensor_attrs(node: Any) -> tuple[str, ...]:
    """A node type's saved attributes that hold tensors (those with a `_raw_saved_*` twin; the
    others are sizes and scalars), computed once per type."""
    return _attrs_of_type(type(node))


class _Readers(dict):
    """Node type -> one call that reads all its saved tensors (`operator.attrgetter`), or None
    for a type that saves none. The scan reads every fresh node's saved values before each
    backward: one C call per node instead of a Python loop over its attributes; when it raises,
    the scan reads the attributes one by one to learn which failed."""

    def __missing__(self, t: type) -> Callable[[Any], Any] | None:
        names = _attrs_of_type(t)
        reader = operator.attrgetter(*names) if names else None
        self[t] = reader
        return reader


READERS: dict[type, Callable[[Any], Any] | None] = _Readers()


def find_modified_saved(nodes: list[Any], modified: list[Packed], limit: int = 8) -> list[SavedHit]:
    """The walked nodes that hold one of the `modified` packs (at most `limit` hits).

    Unreachable packs (an unrelated graph still alive) are simply never hit. The walk stops early
    once every modified pack has been found.
    """
    wanted = {id(p) for p in modified}  # ids are stable: `modified` keeps the packs alive
    found: set[int] = set()
    hits: list[SavedHit] = []
    # the unpack hook's `_version` read would otherwise pass through the guard's own mode
    with torch._C.DisableTorchFunction():
        _probe(nodes, wanted, found, hits, limit)
    return hits


def _probe(nodes: list[Any], wanted: set[int], found: set[int], hits: list[SavedHit],
           limit: int) -> None:
    for i, node in enumerate(nodes):
        for attr in tensor_attrs(node):
            try:
                getattr(node, attr)
            except SavedTensorModified as err:
                key = id(err.packed)
                if key in wanted and key not in found:
                    found.add(key)
                    hits.append(SavedHit(i, attr, err.packed))
            except Exception:  # freed buffers ("backward through the graph a second time") etc.
                continue
        if len(found) == len(wanted) or len(hits) >= limit:
            return


def storage_key(t: torch.Tensor) -> int | None:
    """The data pointer of a tensor's storage (how the recorder keys in-place writes)."""
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # sparse, meta, or storage-less subclasses
        return None


def modifying_write(log: dict[int, InplaceRecord], packed: Packed,
                    since_iteration: int) -> InplaceRecord | None:
    """The recorded in-place write that changed `packed` after it was saved, if the recorder saw
    one (it keeps the latest write per storage; a write from before the save does not count).

    The log is keyed by storage address, which the allocator reuses: a write recorded before
    `since_iteration` (when the saved tensor was made) belongs to an older tensor.
    """
    key = storage_key(packed.tensor)
    rec = log.get(key) if key is not None else None
    if rec is None or rec.iteration < since_iteration:
        return None
    if packed.version < rec.version <= packed.tensor._version:
        return rec
    return None


def shares_saved(packed: Packed, exact: bool = False) -> Any:
    """A predicate: is a value the tensor that was saved (same storage and version counter), or
    with `exact`, that very view of it (same data pointer and shape)?"""
    pt = packed.tensor
    key = storage_key(pt)

    def match(v: Any) -> bool:
        if not isinstance(v, torch.Tensor) or key is None or v._version != pt._version:
            return False
        if exact and (v.data_ptr() != pt.data_ptr() or v.shape != pt.shape):
            return False
        return storage_key(v) == key

    return match


_EXPECTED_VERSION = re.compile(r"expected version (\d+)")
_MODIFIED = "modified by an inplace operation"


MAX_FREED_READS = 64  # reads failing as "freed" before the rest of a stale graph is skipped


# NOTE [saved values behind other hooks]
# A saved value packed by someone else's saved-tensor hooks is handed back by their unpack hook,
# and that hook may do anything: a non-reentrant checkpoint recomputes its forward (the user's
# code runs once more), a selective-checkpoint region hands each value out once only ("Trying to
# backward an extra time" at the real backward), save_on_cpu copies it back. So light mode's
# read before a backward (SavedCheck, lean_scan) never reads such a value: whenever such hooks
# may have packed the fresh nodes' values (entered since the last backward, seen by the guard's
# wrapper of saved_tensors_hooks.__enter__, or on the stack now), the lean walk gives way to the
# full scan, which first asks each node's raw saved value for its unpack hook (without calling
# it) and skips the node when it is not ours. PyTorch still checks those values' versions at
# the backward, and GG903/GG005 explain its error afterwards.


class SavedCheck:
    """Light mode's in-place check: PyTorch's own, read before the backward runs.

    With graphguard's saved-tensor hooks off (light mode: they cost a Python call per saved
    tensor at every forward), PyTorch keeps its own version check, and reading a saved value
    runs it: a saved tensor changed in place since it was saved raises PyTorch's error here, in
    C++, at ~0.5 us per saved tensor and no Python per op. Each such tensor is then adopted
    (`SavedTensor.register_hooks` hands it to `adopt`, which returns its `Packed` record, and
    `unpack` takes over its version check), so GG005 finds it exactly as it finds those the
    hooks recorded. Custom Functions' `saved_tensors` are not adopted (PyTorch's error does not
    say which of them changed): PyTorch raises for them, and GG903/GG005 explain afterwards.

    The graph scan reads the nodes made since the last backward as it walks them (the node was
    just touched: one pass instead of two, capture/scan.py); `read` reads the others after it.
    A read failing for any other reason counts as freed (by an earlier backward); after
    MAX_FREED_READS of them the check stops: the graph is stale, which GG001/GG003 report.
    `freed_at` is the walk index of the first node found freed, -1 if none.
    """

    __slots__ = ("unpack", "adopt", "adopted", "freed", "freed_at", "stopped", "careful")

    def __init__(self, unpack: Any, adopt: Any, careful: bool = False) -> None:
        self.unpack = unpack
        self.adopt = adopt
        # other saved-tensor hooks may have packed some of the values: look before reading
        # (NOTE [saved values behind other hooks])
        self.careful = careful
        self.adopted = 0  # saved tensors adopted (usually 0: the clean path of every backward)
        self.freed = 0
        self.freed_at = -1
        self.stopped = False

    def failed(self, i: int, node: Any, attr: str, err: RuntimeError) -> bool:
        """Reading walk node `i`'s `attr` raised `err`: adopt a value changed in place. True when
        the rest of the node is not worth reading (its buffers are gone)."""
        if isinstance(err, SavedTensorModified):
            return False  # already ours
        message = str(err)
        if _MODIFIED not in message:
            self.freed += 1  # freed by an earlier backward (GG001/GG003's)
            if self.freed_at < 0 and FREED_MESSAGE in message:
                self.freed_at = i
            if self.freed >= MAX_FREED_READS:
                self.stopped = True
            return True
        if attr != "saved_tensors":
            self.adopted += _adopt(node, attr, message, self.unpack, self.adopt)
        return False

    def hooked(self, node: Any) -> bool:
        """Whether `node`'s saved values were packed by saved-tensor hooks other than ours:
        reading one would call their unpack hook (NOTE [saved values behind other hooks]).
        One value tells for the node: the hooks on the stack when the op ran packed them all."""
        for attr in tensor_attrs(node):
            custom = attr == "saved_tensors"  # a custom Function's: _raw_saved_tensors, a tuple
            raw = getattr(node, "_raw_saved_tensors" if custom else "_raw" + attr, None)
            if custom and raw:
                raw = raw[0]
            if raw is None or (custom and not raw):
                continue
            hook = getattr(raw, "unpack_hook", None)
            return hook is not None and hook != self.unpack
        return False

    def read(self, nodes: list[Any], indices: list[int]) -> None:
        """Read the saved values of the walked nodes at `indices` (the scan leaves out those it
        read already and those an earlier backward freed: their reads only raise "freed", and an
        exception per node made a stale 100,000-node graph's check 8x slower)."""
        for i in indices:
            if self.stopped:
                return
            node = nodes[i]
            if self.careful and self.hooked(node):
                continue
            for attr in tensor_attrs(node):
                try:
                    getattr(node, attr)
                except RuntimeError as err:
                    if self.failed(i, node, attr, err):
                        break


def _adopt(node: Any, attr: str, message: str, unpack: Any, adopt: Any) -> int:
    raw = getattr(node, "_raw" + attr, None)
    if raw is None:
        return 0
    m = _EXPECTED_VERSION.search(message)
    holder: list[Packed] = []

    def pack(t: torch.Tensor) -> Packed:
        version = int(m.group(1)) if m else t._version - 1
        p = adopt(t, version)
        holder.append(p)
        return p

    try:
        raw.register_hooks(pack, unpack)
    except Exception:  # hooks of the user's own on this value, or a value torch will not hand out
        return 0
    return 1 if holder else 0
