"""Where a tensor lives inside the user's modules: registered, a plain attribute, or a plain list.

Looked up at report time only (never per op), through the modules visible in the user's frames.
``names.py`` finds registered parameters and a top module's own tensor attributes; this also looks
into submodules and into plain Python containers of modules, which ``nn.Module`` does not register
(the reason their parameters are missing from ``model.parameters()``).
"""
from __future__ import annotations

import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch

from ..capture.usercode import is_user_object
from ..model import Frame
from .names import candidates, live_user_frames, python_path

__all__ = ["Owner", "find_owner", "user_modules", "MAX_MODULES"]

MAX_MODULES = 2000  # modules looked into per search
MAX_ITEMS = 64  # elements of one plain container looked into
NESTING = 2  # plain containers looked into inside one another (`self.hids[0][0]`: pairs in a list)
_HOW_RANK = {"registered": 0, "attribute": 1, "container": 2}


@dataclass(frozen=True)
class Owner:
    """A tensor found inside a module the user holds."""

    path: str  # `model.head.weight`, `model.scale`, `model.blocks[0].weight`
    how: str  # registered (an nn.Parameter in _parameters) | attribute | container
    frame: Frame  # the frame whose variable is the root of the path
    root: Any = field(default=None, compare=False, repr=False)  # the top module (drop soon)


def _plain_attrs(m: torch.nn.Module) -> Iterator[tuple[str, Any]]:
    for attr, v in list(vars(m).items()):
        if attr.startswith("_") or isinstance(v, (torch.nn.Module, str, int, float, bool, type(None))):
            continue
        yield attr, v


def _container_items(v: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(v, (list, tuple)):
        for i, x in enumerate(v[:MAX_ITEMS]):
            yield f"[{i}]", x
    elif isinstance(v, dict):
        for i, (k, x) in enumerate(v.items()):
            if i >= MAX_ITEMS:
                break
            if isinstance(k, (str, int)):
                yield f"[{k!r}]", x


def _nested_items(v: Any, depth: int = NESTING) -> Iterator[tuple[str, Any]]:
    """The items of a plain container and of the plain containers inside it, `depth` levels deep,
    keyed by their whole subscript (`[0][1]`): layers are often kept as a list of [layer,
    activation] pairs or a dict of lists, no level of which nn.Module registers."""
    for key, x in _container_items(v):
        yield key, x
        if depth > 1 and isinstance(x, (list, tuple, dict)) and not isinstance(x, torch.Size):
            for sub, y in _nested_items(x, depth - 1):
                yield key + sub, y


def _search(t: torch.Tensor, module: torch.nn.Module, prefix: str, budget: list[int],
            in_container: bool) -> tuple[str, str] | None:
    """(path, how) of `t` inside `module`, or None. `budget` counts modules left to look into."""
    for pname, p in module.named_parameters():
        if p is t:
            return python_path(prefix, pname), "container" if in_container else "registered"
    for mpath, m in module.named_modules():
        budget[0] -= 1
        if budget[0] < 0:
            return None
        base = python_path(prefix, mpath)
        for attr, v in _plain_attrs(m):
            if v is t:
                return f"{base}.{attr}", "container" if in_container else "attribute"
            for key, x in _nested_items(v):
                if x is t:
                    return f"{base}.{attr}{key}", "container"
                if isinstance(x, torch.nn.Module) and not in_container:
                    found = _search(t, x, f"{base}.{attr}{key}", budget, True)
                    if found:
                        return found
    return None


def user_modules(frames: list[types.FrameType] | None = None) -> Iterator[tuple[str, Any, Frame]]:
    """(name, module, frame) for the nn.Modules the user's frames hold: directly, or one level
    down in a list, tuple or dict (`models["D"]`). Each module once, innermost frame first."""
    frames = frames if frames is not None else live_user_frames()
    seen: set[int] = set()
    for f in frames:
        fr = Frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        for name, value, _ in candidates(f):
            if isinstance(value, torch.nn.Module):
                found = [(name, value)]
            elif isinstance(value, (list, tuple, dict)) and not isinstance(value, torch.Size):
                found = [(f"{name}{key}", x) for key, x in _container_items(value)
                         if isinstance(x, torch.nn.Module)]
            elif _user_object(value) or _framework_object(value):
                found = list(_held_modules(name, value))
            else:
                continue
            for n, m in found:
                if id(m) not in seen:
                    seen.add(id(m))
                    yield n, m, fr


def _user_object(v: Any) -> bool:
    """An instance of a class of the user's (a trainer, a dataclass bundling the data, the net and
    the optimizer), not a module, tensor, container, function, class or library object."""
    if type(v) in weakref.ProxyTypes or isinstance(
            v, (torch.nn.Module, torch.Tensor, type, types.ModuleType, types.FunctionType,
                types.MethodType, list, tuple, dict)) or not hasattr(v, "__dict__"):
        return False
    return is_user_object(v)


def _framework_object(v: Any) -> bool:
    """An object of a library other than torch and graphguard held in a user frame: a framework's
    trainer (the Hugging Face `Trainer`, Lightning's) holds the user's model, which the user then
    names through it (`trainer.model.aux_head`). Torch's objects (optimizers, loaders) and
    graphguard's (the guard, its callbacks) hold modules the user names by their own variables.
    Only objects a user frame holds directly: below them, only the user's objects are searched."""
    if type(v) in weakref.ProxyTypes or isinstance(
            v, (torch.nn.Module, torch.Tensor, type, types.ModuleType, types.FunctionType,
                types.MethodType, list, tuple, dict)) or not hasattr(v, "__dict__"):
        return False
    return type(v).__module__.partition(".")[0] not in ("builtins", "torch", "graphguard")


def _held_modules(name: str, obj: Any, depth: int = 2) -> Iterator[tuple[str, Any]]:
    """(path, module) for the nn.Modules a user object holds in its attributes, directly, one
    level down in a list, tuple or dict, or in a user object it holds (`model.data.embedding` of
    a dataclass `model` whose `data` holds the embedding), `depth` objects deep."""
    try:
        items = list(vars(obj).items())[:MAX_ITEMS]
    except TypeError:
        return
    for attr, v in items:
        if attr.startswith("__"):
            continue
        path = f"{name}.{attr}"
        if type(v) in weakref.ProxyTypes:
            continue  # a weak proxy (a trainer's back-reference): the object it stands for is not held here
        if isinstance(v, torch.nn.Module):
            yield path, v
        elif isinstance(v, (list, tuple, dict)) and not isinstance(v, torch.Size):
            yield from ((f"{path}{key}", x) for key, x in _container_items(v)
                        if isinstance(x, torch.nn.Module))
        elif depth > 1 and _user_object(v):
            yield from _held_modules(path, v, depth - 1)


def find_owner(t: torch.Tensor, frames: list[types.FrameType] | None = None) -> Owner | None:
    """The best place `t` is found inside a module held by the user (registered first)."""
    best: Owner | None = None
    budget = [MAX_MODULES]
    for name, module, fr in user_modules(frames):
        found = _search(t, module, name, budget, False)
        if found and (best is None or _HOW_RANK[found[1]] < _HOW_RANK[best.how]):
            best = Owner(found[0], found[1], fr, module)
            if best.how == "registered":
                return best
        if budget[0] < 0:
            return best
    return best
