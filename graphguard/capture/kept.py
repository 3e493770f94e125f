"""Tensors with autograd history that are still alive, and what holds them: run-time evidence for
GG101 (graphs kept past their iteration), read from the collector rather than from names.

Every live tensor with a `grad_fn` is found by one pass over the collector's objects, whoever
holds it: a local, a global, an attribute of any object, a library's container, a closure. What
holds it (a list, a deque, a module's buffers) is read from its referrers, which is the object
graph, not the source. Both are costly (one pass over every tracked object), so they run at the
rule's looks only (a few times per run, then every 512th iteration), never per op or per step,
and the caller drops what they return before the user's code runs again.
"""
from __future__ import annotations

import collections
import gc
import itertools
import sys
import time
import weakref
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import torch

__all__ = ["live_graph_tensors", "live_instances", "Held", "KeptWatch", "containers_holding",
           "owning_module", "MAX_ITEMS"]

MAX_ITEMS = 256  # elements of one container looked at (the newest ones)
SMALL = 8  # a tuple or dict this small is one record (`(loss, acc)`): its container is the holder
_SEQ = (list, collections.deque)


def _history(o: Any) -> bool:
    try:
        return o.grad_fn is not None
    except Exception:  # a no_grad view whose base changed in place refuses to say; odd subclasses
        return False


def live_graph_tensors() -> list[torch.Tensor]:
    """Every live tensor that has a grad_fn (parameters and other leaves never do): one pass over
    every object the collector tracks (about 70 ms in a process that imported transformers)."""
    return [o for o in live_instances(torch.Tensor) if _history(o)]


def live_instances(cls: type, objs: list[Any] | None = None) -> list[Any]:
    """The objects the collector tracks (or of `objs`) whose type is `cls` or a subclass of it.

    Filtered at C speed: the types of all objects, then the few hundred distinct types tested
    once each, then the objects picked by a mask (a Python loop over 350,000 objects cost about
    twice as much). type() and issubclass, not isinstance: isinstance asks `__class__` of lazy
    proxies, which imports or warns on their behalf."""
    if objs is None:
        objs = gc.get_objects()
    kinds = list(map(type, objs))
    wanted = {k for k in set(kinds) if issubclass(k, cls)}
    return list(itertools.compress(objs, map(wanted.__contains__, kinds)))


class KeptWatch:
    """The live tensors with history, found without a pass over the whole heap at every look.

    A tensor the collector tracks is in a young generation until a collection of generation 1
    (or a full one) finds it alive and moves it to the old generation. The watch's collector
    callback runs at the start of each such collection and notes, weakly, the tensors with
    history in the young generations: so every tensor that ever reaches the old generation while
    the watch is on has been noted on its way. A look then reads the young generations (a few
    thousand objects), the tensors noted since the last look and the ones the last look found:
    the same tensors a whole-heap pass finds, for a fraction of its cost (about 70 ms in a
    process that imported transformers, 350,000 objects). The first look, and then every
    WHOLE_EVERY-th the time allows (COST_RATIO), passes over the whole heap: for what was made
    before the watch began, and for an old tensor given history in place. Reading the young
    generations alone, without the callback, missed a value a collection had just promoted."""

    MAX_NOTED = 50_000  # weak references kept between looks before the dead ones are dropped
    # every so many looks, one over the whole heap: an old tensor that gets history in place
    # (`total += loss` on a tensor made long before) was never young with history. A whole pass
    # due sooner than COST_RATIO times its last duration after it is put off to a later look
    # (the look itself still happens, over the young generations): in a loop of 0.5 ms steps a
    # 0.2 s pass every few hundred steps would double the run's time.
    WHOLE_EVERY = 8
    COST_RATIO = 25

    def __init__(self) -> None:
        self.noted: dict[int, Any] = {}  # id -> weakref of tensors with history seen promoted
        self.found: list[Any] = []  # weakrefs of what the last look found
        self.looks = 0  # looks since the last whole pass
        self.whole_passes = 0
        self.next_whole_at = 0.0  # perf_counter time before which a due whole pass waits
        self.on = False

    def install(self) -> None:
        if not self.on:
            gc.callbacks.append(self._before_collection)
            self.on = True

    def remove(self) -> None:
        if self.on:
            try:
                gc.callbacks.remove(self._before_collection)
            except ValueError:
                pass
            self.on = False
        self.noted.clear()
        self.found = []

    def _before_collection(self, phase: str, info: dict) -> None:
        # runs inside the user's allocation that triggered the collection: never raise, keep it
        # short (the young generations only)
        try:
            if phase != "start" or info.get("generation", 0) < 1:
                return
            noted = self.noted
            for t in live_instances(torch.Tensor, gc.get_objects(generation=0) + gc.get_objects(generation=1)):
                if _history(t) and id(t) not in noted:
                    noted[id(t)] = weakref.ref(t)
            if len(noted) > self.MAX_NOTED:
                for k in [k for k, r in noted.items() if r() is None]:
                    del noted[k]
        except Exception:
            pass

    def live(self) -> list[torch.Tensor]:
        """Every live tensor that has a grad_fn (as `live_graph_tensors()`), read from the young
        generations and what the watch noted, after one whole-heap pass at the first look."""
        first = self.whole_passes == 0
        whole = not self.on or first or (self.looks >= self.WHOLE_EVERY
                                         and time.perf_counter() >= self.next_whole_at)
        self.looks += 1
        if whole:
            started = time.perf_counter()
            out = live_graph_tensors()
            ended = time.perf_counter()
            self.whole_passes += 1
            self.looks = 0
            self.next_whole_at = ended + self.COST_RATIO * (ended - started)
        else:
            young = gc.get_objects(generation=0) + gc.get_objects(generation=1)
            out = [t for t in live_instances(torch.Tensor, young) if _history(t)]
            seen = {id(t) for t in out}
            for r in itertools.chain(self.found, self.noted.values()):
                t = r()
                if t is not None and id(t) not in seen and _history(t):
                    seen.add(id(t))
                    out.append(t)
        self.noted = {}
        self.found = [weakref.ref(t) for t in out]
        return out


@dataclass
class Held:
    """A container holding tensors with history: a list, a deque, a tuple or a set, or a dict
    keyed by something other than names (`hist[epoch] = loss`). Holds them: drop it soon."""

    container: Any
    tensors: list[torch.Tensor]  # its newest elements with history, one level into records
    length: int  # elements in the container (all of them)


def _elements(value: Any) -> Iterator[Any]:
    """The newest elements of a container, and the values of its small records."""
    if isinstance(value, dict):
        seq = list(itertools.islice(reversed(value.values()), MAX_ITEMS))
    elif isinstance(value, (list, tuple)):
        seq = value[-MAX_ITEMS:]
    else:  # deque, set
        seq = list(itertools.islice(reversed(value) if isinstance(value, collections.deque)
                                    else iter(value), MAX_ITEMS))
    for x in seq:
        if isinstance(x, (tuple, list)) and len(x) <= SMALL:
            yield from x
        elif isinstance(x, dict) and len(x) <= SMALL:
            yield from x.values()
        else:
            yield x


def _namespace(d: dict, namespaces: set[int]) -> bool:
    """A dict of names (a module's globals, an object's attributes, a record `{'loss': l}`):
    its values are separate holders, never one pile."""
    return id(d) in namespaces or all(type(k) is str for k in itertools.islice(d, SMALL * 4))


def _record(o: Any) -> bool:
    """A small tuple `(loss, acc)` or a small dict of names `{'loss': l}`: one entry of a log."""
    if type(o) is tuple:
        return len(o) <= SMALL
    return isinstance(o, dict) and len(o) <= SMALL and all(type(k) is str for k in o)


def containers_holding(tensors: list[torch.Tensor], own: Iterable[Any] = ()) -> list[Held]:
    """The containers that hold any of `tensors` directly or through a small record (a tuple
    `(loss, acc)`, a dict `{'loss': l}`), each with its newest elements that have history.
    `own` are the caller's lists of these tensors (referrers too, never holders)."""
    if not tensors:
        return []
    skip = {id(o) for o in own}
    skip.add(id(tensors))
    namespaces = {id(vars(m)) for m in list(sys.modules.values()) if hasattr(m, "__dict__")}
    found: dict[int, Any] = {}
    records: list[Any] = []
    for r in gc.get_referrers(*tensors):
        if id(r) in skip:
            continue
        if _record(r):
            records.append(r)
        elif isinstance(r, (*_SEQ, tuple, set)) or isinstance(r, dict) and not _namespace(r, namespaces):
            found[id(r)] = r
    if records:
        skip.add(id(records))
        for r in gc.get_referrers(*records):
            if id(r) not in skip and (isinstance(r, (*_SEQ, tuple, set)) or
                                      isinstance(r, dict) and not _namespace(r, namespaces)):
                found[id(r)] = r
    out = []
    for c in found.values():
        ts = [x for x in _elements(c) if isinstance(x, torch.Tensor) and _history(x)]
        if ts:
            out.append(Held(c, ts, len(c)))
    return out


def owning_module(t: torch.Tensor) -> tuple[torch.nn.Module, str] | None:
    """(module, attribute) when a module keeps `t` as a buffer or a plain attribute (its own
    state: a running statistic), read from the referrers; None otherwise."""
    for d in gc.get_referrers(t):
        if isinstance(d, torch.nn.Module):  # attributes kept inline (no __dict__ made yet)
            attrs = [k for k, v in vars(d).items() if v is t]
            if attrs:
                return d, attrs[0]
            continue
        if not isinstance(d, dict):
            continue
        attrs = [k for k, v in d.items() if v is t and isinstance(k, str)]
        if not attrs:
            continue
        for o in gc.get_referrers(d):
            if isinstance(o, torch.nn.Module):
                if getattr(o, "__dict__", None) is d or o.__dict__.get("_buffers") is d:
                    return o, attrs[0]
            elif isinstance(o, dict) and o.get("_buffers") is d:
                for mod in gc.get_referrers(o):
                    if isinstance(mod, torch.nn.Module) and getattr(mod, "__dict__", None) is o:
                        return mod, attrs[0]
    return None
