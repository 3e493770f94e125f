"""How a tensor is held, read from the object graph: registered as a parameter of a live module, a
plain tensor attribute of a module (`self.w = torch.randn(..., requires_grad=True)`), inside a
plain list / tuple / dict that a module's `__dict__` keeps (Parameters in a list, layers in a
list), or by no module at all; and whether the program holds it anywhere.

Run-time evidence for GG011, whatever holds the model (a local, a closure's cell, a slotted
object, a dict of models keyed by int) and whether any name reaches it: the facts come from the
module tree (capture/modtree.py) and from the collector's referrers, never from the source or
the user's names. Each call costs a few passes over the collector's objects: ask for a batch of
tensors at once, when new untrained leaves show up (or once per optimizer), never per op, and
drop what is returned before the user's code runs again (it holds modules).
"""
from __future__ import annotations

import gc
import os
import sys
import types
from dataclasses import dataclass
from typing import Any, Iterable

import torch

from .modtree import ModuleTree
from .usercode import PACKAGE_DIR, is_user_file

__all__ = ["Holding", "PlainHold", "plain_holders", "holdings", "held_by_program",
           "containers_with", "NESTING", "MAX_CONTAINER"]

NESTING = 2  # plain containers looked through inside one another (`self.hids[0][0]`: pairs in a list)
MAX_CONTAINER = 4096  # a longer container is data, not a model's parts: not looked into
_GG_DIR = PACKAGE_DIR + os.sep


@dataclass(frozen=True)
class PlainHold:
    """A module keeps an object outside its registries: `module.__dict__[attr]` is the object
    itself (`keys` empty: a plain attribute) or a plain container holding it at `keys` (`[0]`,
    `['a'][1]`)."""

    module: torch.nn.Module
    attr: str
    keys: str = ""


@dataclass(frozen=True)
class Holding:
    """How the live modules hold one tensor.

    how: `registered` (a module's `_parameters` holds it, and the chain of registering modules
    above reaches `model`), `attribute` (a plain attribute of `module`) or `container` (a plain
    list / tuple / dict kept by `module` holds the tensor itself, or, `layer` set, a module that
    registers it). `path` is the chain of attribute names and keys from `model` down to the
    tensor (`blocks[0].weight`): the object graph's own keys, to tell two places apart, never a
    user's name."""

    how: str
    module: torch.nn.Module  # registers it / keeps it / keeps the container
    attr: str  # its parameter name, or the attribute that keeps it (or its container)
    model: torch.nn.Module  # the outermost module above it
    path: str
    layer: torch.nn.Module | None = None  # container: the layer in the container that registers it


def _key(k: Any) -> str | None:
    return f"[{k!r}]" if isinstance(k, (str, int)) and not isinstance(k, bool) else None


def _skipped(own: Iterable[Any]) -> set[int]:
    return {id(o) for o in own}


def plain_holders(objs: list[Any], tree: ModuleTree, own: Iterable[Any] = ()) -> dict[int, PlainHold]:
    """id(obj) -> where a live module keeps `obj` outside its registries: as a plain attribute
    (names starting with `_` are the module's own machinery, left out) or inside plain containers
    its `__dict__` keeps, `NESTING` levels deep. A plain attribute wins over a container. Read
    from the referrers: one pass over the collector per level of containers. `own`: the caller's
    lists of `objs` (referrers, never holders)."""
    if not objs:
        return {}
    skip = _skipped(own)
    # the tree's own records refer to every module (referrers, never holders)
    skip.update((id(objs), id(tree.modules), id(tree.parent), id(tree.owner)))
    # a module's __dict__ -> the module (reading `__dict__` makes it, so its values show up as
    # the dict's, not the module's); its registries are where the tree looks, not here
    attrs_of: dict[int, torch.nn.Module] = {}
    registries: set[int] = set()
    for m in tree.modules:
        d = m.__dict__
        attrs_of[id(d)] = m
        for reg in ("_parameters", "_buffers", "_modules"):
            r = d.get(reg)
            if r is not None:
                registries.add(id(r))
    skip.update((id(attrs_of), id(registries)))
    out: dict[int, PlainHold] = {}
    # for each container met on the way up: the original objects it holds, with their keys
    holds: dict[int, list[tuple[int, str]]] = {id(o): [(id(o), "")] for o in objs}
    frontier = list(objs)
    for level in range(NESTING + 1):
        found: dict[int, Any] = {}
        nxt: dict[int, list[tuple[int, str]]] = {}
        want = {id(o) for o in frontier}
        skip.add(id(frontier))
        for r in gc.get_referrers(*frontier):
            if id(r) in skip or id(r) in registries:
                continue
            t = type(r)
            if issubclass(t, dict):
                if len(r) > MAX_CONTAINER:
                    continue
                m = attrs_of.get(id(r))
                items = [(k, v) for k, v in r.items() if id(v) in want]
                for k, v in items:
                    if m is not None:
                        if isinstance(k, str) and not k.startswith("_"):
                            for orig, keys in holds[id(v)]:
                                prev = out.get(orig)
                                if prev is None or (prev.keys and not keys):
                                    out[orig] = PlainHold(m, k, keys)
                    elif level < NESTING and (key := _key(k)) is not None:
                        found[id(r)] = r
                        nxt.setdefault(id(r), []).extend((orig, key + keys) for orig, keys in holds[id(v)])
            elif level < NESTING and (t is list or t is tuple) and len(r) <= MAX_CONTAINER:
                for i, v in enumerate(r):
                    if id(v) in want:
                        found[id(r)] = r
                        nxt.setdefault(id(r), []).extend((orig, f"[{i}]" + keys) for orig, keys in holds[id(v)])
        if not found:
            break
        frontier = list(found.values())
        holds = nxt
    return out


def holdings(tensors: list[torch.Tensor], tree: ModuleTree, own: Iterable[Any] = ()) -> dict[int, Holding]:
    """id(tensor) -> how the live modules hold it (registered first, then a plain attribute, then
    a plain container); a tensor no module holds is left out. A layer that sits in a plain
    container of a module (nothing registers it) counts as that container's: its model is the
    container's module's. `own`: the caller's lists of the tensors."""
    own = list(own)
    out: dict[int, Holding] = {}
    loose: list[torch.Tensor] = []
    regs: dict[int, tuple[torch.nn.Module, str, torch.nn.Module]] = {}
    for t in tensors:
        hit = tree.registering(t)
        if hit is None:
            loose.append(t)
        else:
            regs[id(t)] = (hit[0], hit[1], tree.root_of(hit[0]))
    roots = list({id(r): r for _, _, r in regs.values()}.values())
    in_box = plain_holders(roots, tree, own + [regs]) if roots else {}
    for t in tensors:
        if id(t) not in regs:
            continue
        m, attr, root = regs[id(t)]
        inner = _join(tree.path_of(m), attr)
        box = in_box.get(id(root))
        if box is not None and box.keys:
            # a layer in a plain list of a module: not registered, so not in model.parameters()
            path = _join(tree.path_of(box.module), box.attr) + box.keys + ("." + inner if inner else "")
            out[id(t)] = Holding("container", box.module, box.attr, tree.root_of(box.module), path, root)
        else:
            out[id(t)] = Holding("registered", m, attr, root, _join(tree.path_of(m), attr))
    if loose:
        boxes = plain_holders(loose, tree, own)
        for t in loose:
            box = boxes.get(id(t))
            if box is not None:
                out[id(t)] = Holding("container" if box.keys else "attribute", box.module, box.attr,
                                     tree.root_of(box.module),
                                     _join(tree.path_of(box.module), box.attr) + box.keys)
    return out


def _join(a: str, b: str) -> str:
    return f"{a}.{b}" if a and b else a or b


def _own_frame(f: Any) -> bool:
    return os.path.abspath(f.f_code.co_filename).startswith(_GG_DIR)


def held_by_program(objs: list[Any], own: Iterable[Any] = ()) -> set[int]:
    """The ids of `objs` that something of the program holds: any object of the collector that
    refers to them (a dict, a list, a closure's cell, a slotted object; `own`, the caller's lists,
    left out) or a local of a live frame of the user's code. An object only the autograd graph
    keeps (a layer built inline in an expression, gone since) is held by nothing. One pass over
    the collector, plus the live frames."""
    if not objs:
        return set()
    skip = _skipped(own)
    skip.add(id(objs))
    want = {id(o) for o in objs}
    held: set[int] = set()
    for r in gc.get_referrers(*objs):
        if id(r) in skip or type(r) is types.FrameType:
            continue  # a frame's locals are read below, the user's frames only
        held.update(id(v) for v in _values(r) if id(v) in want)
    f = sys._getframe(1)
    while f is not None and len(held) < len(want):
        if not _own_frame(f) and is_user_file(f.f_code.co_filename):
            held.update(id(v) for v in f.f_locals.values() if id(v) in want)
        f = f.f_back
    return held


def _values(r: Any) -> Iterable[Any]:
    """What a referrer holds, as far as the collector's referrers tell (anything else that refers
    to an object holds it: a cell, an instance with slots)."""
    t = type(r)  # type() and issubclass: isinstance asks `__class__` of lazy proxies
    if issubclass(t, dict):
        return list(r.values())
    if issubclass(t, (list, tuple, set, frozenset)):
        return list(r)
    try:
        return gc.get_referents(r)
    except Exception:
        return ()


def containers_with(t: torch.Tensor, own: Iterable[Any] = ()) -> list[tuple[int, list[Any]]]:
    """The elements of each plain list, tuple or dict (not a namespace: a module's globals, an
    object's attributes) that holds `t` directly, read from the referrers: the program's own sets
    of tensors (`weights = [w1, w2, w3]`), whoever holds them. Each container once, as a list of
    its elements (values for a dict), with its id; one of more than MAX_CONTAINER elements is left out."""
    skip = _skipped(own)
    namespaces = {id(vars(m)) for m in list(sys.modules.values()) if hasattr(m, "__dict__")}
    out = []
    for r in gc.get_referrers(t):
        if id(r) in skip:
            continue
        t_r = type(r)
        if (t_r is list or t_r is tuple) and len(r) <= MAX_CONTAINER:
            out.append((id(r), list(r)))
        elif issubclass(t_r, dict) and len(r) <= MAX_CONTAINER and id(r) not in namespaces \
                and not _attribute_dict(r):
            out.append((id(r), list(r.values())))
    return out


def _attribute_dict(d: dict) -> bool:
    """An instance's `__dict__` (an object's attributes are separate holders, not one set):
    some referrer of `d` has it as its `__dict__`."""
    return any(getattr(o, "__dict__", None) is d for o in gc.get_referrers(d)
               if not issubclass(type(o), (dict, list, tuple)))
