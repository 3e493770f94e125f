"""Capture state: node stamps and marks, per-guard records of leaves, cuts and in-place writes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ..model import Site

if TYPE_CHECKING:
    from .gradmode import GradSwitch

__all__ = ["Stamp", "Mark", "LeafRecord", "LeafSite", "Cut", "InplaceRecord", "Packed"]


class Stamp(NamedTuple):
    """Stored in `node.metadata[key]` when the node is created (dies with the node)."""

    iteration: int  # guard iteration in which the node was made
    site: Site  # user frames of the op that made it
    epoch: int  # backward calls started before it was made


class Mark(NamedTuple):
    """Stored in `node.metadata[key]` by a backward that traversed the node."""

    backward: int  # index of that backward call in the guard
    iteration: int
    site: Site  # where that backward was called
    retained: bool  # retain_graph=True (buffers kept) or not (buffers freed)

@dataclass
class LeafRecord:
    """A tensor created with requires_grad=True (or requires_grad_()) inside the guard."""

    site: Site  # where it was made
    iteration: int
    func: str  # `zeros`, `tensor`, `requires_grad_`
    stats: "LeafSite"  # the per-line record this leaf counts in


@dataclass
class LeafSite:
    """All leaves made by one line: GG103 judges the line, since per-iteration leaves die young."""

    site: Site
    func: str
    first_iteration: int
    count: int = 0
    used: bool = False  # optimized, .grad read, or an input of autograd.grad
    grad_received: bool = False  # some backward reached it


@dataclass(frozen=True)
class Cut:
    """An op whose inputs required grad and whose output does not: gradient flow stops here."""

    index: int  # position in the guard's cut list (taint sets hold these)
    op: str  # `gt`, `argmax`, `detach`, `item`, `tensor` (copy), `mul` under no_grad...
    site: Site
    iteration: int
    no_grad: bool  # the op ran with grad mode off
    leaves: tuple[Any, ...]  # weakrefs to the requires-grad leaves behind its inputs
    leaf_ids: frozenset[int] = field(default_factory=frozenset)  # ids of those leaves (live ones)
    # the grad-mode switch in force when it ran with grad mode off (capture/gradmode.py)
    switch: GradSwitch | None = None
    checkpointed: bool = False  # ran inside a reentrant checkpoint's forward (its own no_grad)


@dataclass(frozen=True)
class AddedTerm:
    """A scalar without gradient, computed through cuts from values that had one, added to a
    scalar that has a gradient (`loss = ce + dice_from_argmax`): it changes the sum's value and
    gives nothing to its gradient."""

    op: str  # `add`, `__add__`, `__iadd__`, `sub`, ...
    site: Site  # where it is added
    iteration: int
    cuts: frozenset[int]  # indices of the cuts behind the added value (its taint)
    value: Any  # a weak reference to the added value


@dataclass(frozen=True)
class InplaceRecord:
    """An in-place write seen by the mode (kept per storage, latest only)."""

    op: str
    site: Site
    version: int  # the tensor's _version right after the write
    iteration: int
    # made inside optimizer.step() (the recorder's `in_step`): an optimizer's own update, recorded
    # at the user's `.step()` line (GG005 tells a forward reused after a step from other writes)
    in_step: bool = False


class Packed:
    """What the saved-tensor pack hook stores in place of a saved tensor.

    It keeps `t.detach()` (not `t`: keeping `t` makes a reference cycle, pytorch#115255), which
    shares t's version counter, so an in-place change after saving is visible as a version bump.
    """

    __slots__ = ("tensor", "version", "op", "site", "__weakref__")

    def __init__(self, tensor: Any, version: int, op: str, site: Site) -> None:
        self.tensor = tensor
        self.version = version
        self.op = op  # the op that saved it ("" when not recorded)
        self.site = site  # where that op ran (empty when not recorded)
