"""A fast map from live objects (tensors, parameters) to data, holding the keys weakly.

``torch.utils.weak.WeakIdKeyDictionary`` builds a weak reference for every lookup (about 4-6 us
on torch 2.13); rules that look at every parameter at every step cannot afford that. Here a
lookup is a plain dict access by ``id`` plus one identity check against the stored weak
reference, so a reused id of a dead object never matches. Not for autograd nodes: they cannot
be weakly referenced, and their ids are reused at once.
"""
from __future__ import annotations

import weakref
from typing import Any, Generic, Iterator, TypeVar

__all__ = ["WeakIdMap"]

V = TypeVar("V")


class WeakIdMap(Generic[V]):
    """obj -> value while obj lives; entries disappear when obj is collected."""

    __slots__ = ("entries", "__weakref__")  # entries: id -> (weakref, value), public for inlined lookups in hot loops

    def __init__(self) -> None:
        self.entries: dict[int, tuple[weakref.ref, V]] = {}

    def get(self, obj: Any, default: Any = None) -> Any:
        e = self.entries.get(id(obj))
        if e is not None and e[0]() is obj:
            return e[1]
        return default

    def __contains__(self, obj: Any) -> bool:
        e = self.entries.get(id(obj))
        return e is not None and e[0]() is obj

    def __setitem__(self, obj: Any, value: V) -> None:
        key = id(obj)
        e = self.entries.get(key)
        if e is not None and e[0]() is obj:
            if e[1] is not value:  # the same value again (a flag set every step): nothing to do
                self.entries[key] = (e[0], value)
            return
        self.entries[key] = (weakref.ref(obj, _remover(weakref.ref(self), key)), value)

    def pop(self, obj: Any, default: Any = None) -> Any:
        e = self.entries.get(id(obj))
        if e is not None and e[0]() is obj:
            del self.entries[id(obj)]
            return e[1]
        return default

    def __len__(self) -> int:
        return len(self.entries)

    def values(self) -> Iterator[V]:
        return iter([v for _, v in list(self.entries.values())])

    def _drop(self, key: int, ref: weakref.ref) -> None:
        e = self.entries.get(key)
        if e is not None and e[0] is ref:  # not a newer object that took the same id
            del self.entries[key]


def _remover(owner: "weakref.ref[WeakIdMap[Any]]", key: int) -> Any:
    # The callback holds the map weakly too: a dropped map must not live on through its keys.
    def remove(ref: weakref.ref) -> None:
        m = owner()
        if m is not None:
            m._drop(key, ref)

    return remove
