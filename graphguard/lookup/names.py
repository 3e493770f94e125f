"""Find the user's own names for objects by looking through the user's live frames.

Names are looked up only when a finding is reported, never per op. A name is only ever one the
user wrote: a local or global variable, an attribute of ``self``, a module's parameter path
(``model.fc.weight``), or an element of a list/dict the user holds (``losses[3]``).
"""
from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from ..model import Frame
from ..capture.sites import user_frames

__all__ = ["NameHit", "find_name", "find_names", "live_user_frames", "find_objects", "candidates", "SKIP_TYPES",
           "python_path", "resolve", "find_held_object"]

SKIP_TYPES = (types.ModuleType, types.FunctionType, type, types.BuiltinFunctionType,
               types.MethodType, str, bytes, int, float, bool, type(None))
MAX_CONTAINER = 256  # elements of one list/dict looked into
MAX_PARAMS = 5000  # parameters of one module looked into


def python_path(prefix: str, dotted: str) -> str:
    """`named_parameters()`'s `layers.2.weight` as the user writes it: `layers[2].weight`."""
    out = prefix
    for part in dotted.split(".") if dotted else ():
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


@dataclass(frozen=True)
class NameHit:
    """A name the user gave an object, and the frame in which the name lives."""

    name: str
    frame: Frame
    scope: str  # local | global | attribute | parameter | element
    value: Any = field(default=None, compare=False, repr=False)  # the object (drop the hit soon)


def live_user_frames(max_frames: int = 12) -> list[types.FrameType]:
    """The live user frames above this call, innermost first (the caller must drop them soon)."""
    return list(user_frames(sys._getframe(1), max_frames))


# NOTE [f_locals snapshots]
# Before Python 3.13 (PEP 667), reading a function frame's `f_locals` copies its locals into a dict
# cached on the frame. That dict keeps every value alive until the frame returns or `f_locals` is
# read again, so a model the user deleted with `del model` would live on after a name lookup
# (tests/test_no_leaks.py). `_forget_locals` empties the cache when nobody else holds it. This is
# safe: writing the cache back into the frame (debuggers, trace functions) refreshes it first.
_SNAPSHOTS = sys.version_info < (3, 13)
_CO_OPTIMIZED = 0x0001  # inspect.CO_OPTIMIZED: a function frame, whose f_locals is a snapshot


def _forget_locals(frame: types.FrameType, loc: Any) -> None:
    # refcount 4: the frame's cache, the caller's `loc`, this parameter, getrefcount's argument;
    # more means the user holds it (`d = locals()`): leave it alone
    if _SNAPSHOTS and type(loc) is dict and frame.f_code.co_flags & _CO_OPTIMIZED \
            and sys.getrefcount(loc) <= 4:
        loc.clear()


def candidates(frame: types.FrameType) -> Iterator[tuple[str, Any, str]]:
    """(name, value, scope) pairs visible from one frame, most specific first."""
    loc = frame.f_locals
    try:
        yield from _candidates_in(frame, loc)
    finally:
        _forget_locals(frame, loc)


def _candidates_in(frame: types.FrameType, loc: Any) -> Iterator[tuple[str, Any, str]]:
    is_module_level = loc is frame.f_globals
    for name, value in list(loc.items()):
        if not name.startswith("__"):
            yield name, value, "global" if is_module_level else "local"
    self_obj = loc.get("self")
    if self_obj is not None and hasattr(self_obj, "__dict__"):
        for attr, value in list(vars(self_obj).items()):
            if attr in ("_parameters", "_buffers", "_modules"):
                continue
            yield f"self.{attr}", value, "attribute"
    if not is_module_level:
        for name, value in list(frame.f_globals.items()):
            if not name.startswith("__"):
                yield name, value, "global"


def _plain_attribute(attr: str, value: Any) -> bool:
    """A module attribute the user set: a public tensor or container, or a private tensor (a
    cache, `self._cached_kvectors`); torch's own `_parameters`, `_buffers`, hooks are dicts."""
    if attr.startswith("__"):
        return False
    if attr.startswith("_"):
        return isinstance(value, torch.Tensor)
    return isinstance(value, (torch.Tensor, list, tuple, dict))


def _expand(name: str, value: Any, scope: str, depth: int = 2) -> Iterator[tuple[str, Any, str]]:
    """The value itself, then what it holds: module parameters/buffers and attributes, container
    elements, a helper object's attributes (bounded depth)."""
    yield name, value, scope
    if isinstance(value, SKIP_TYPES) or isinstance(value, torch.Tensor) or depth <= 0:
        return
    if isinstance(value, torch.nn.Module):
        for i, (pname, p) in enumerate(value.named_parameters()):
            if i >= MAX_PARAMS:
                break
            yield python_path(name, pname), p, "parameter"
        for bname, b in value.named_buffers():
            yield python_path(name, bname), b, "parameter"
        # plain attributes of modules (not registered): `self.w = torch.randn(...)`, `self.state`
        for attr, v in list(vars(value).items()):
            if _plain_attribute(attr, v):
                yield from _expand(f"{name}.{attr}", v, "attribute", depth - 1)
        # and of its submodules, which live in `_modules`, not in its `__dict__`: a layer's
        # recurrent state or cache (`model.rg_lru.recurrent_states`), tensors only
        for i, (mname, sub) in enumerate(value.named_modules()):
            if i >= MAX_PARAMS:
                break
            if not mname:
                continue
            for attr, v in list(vars(sub).items()):
                if isinstance(v, torch.Tensor) and _plain_attribute(attr, v):
                    yield f"{python_path(name, mname)}.{attr}", v, "attribute"
    elif isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        n = len(value)
        for i, v in enumerate(value[:MAX_CONTAINER]):
            # modules too: peer models kept in a plain list (`self.models.append(model)`)
            if isinstance(v, (torch.Tensor, list, tuple, torch.nn.Module)):
                idx = i if i < n - 1 or n <= 2 else -1
                yield from _expand(f"{name}[{idx}]", v, "element", depth - 1)
    elif isinstance(value, dict):
        for i, (k, v) in enumerate(list(value.items())):
            if i >= MAX_CONTAINER:
                break
            # modules too: `nets = {"G": generator, "D": discriminator}`
            if isinstance(v, (torch.Tensor, list, tuple, torch.nn.Module)) and isinstance(k, (str, int)):
                yield from _expand(f"{name}[{k!r}]", v, "element", depth - 1)
    elif type(value).__module__ not in ("builtins",):
        # a user's helper object (a logger, a config, a dataclass bundling the models): its
        # tensor, container and module attributes, from its __dict__ or its __slots__
        for attr, v in _instance_items(value):
            if isinstance(v, (torch.Tensor, list, tuple, dict, torch.nn.Module)) and not attr.startswith("_"):
                yield from _expand(f"{name}.{attr}", v, "attribute", depth - 1)


def _instance_items(value: Any) -> list[tuple[str, Any]]:
    """An object's own attributes: its instance dict, and the slots its classes declare (read
    through the slot descriptors, which run no user code); at most MAX_CONTAINER of them."""
    out: list[tuple[str, Any]] = []
    d = getattr(value, "__dict__", None)
    if isinstance(d, dict):
        out.extend(list(d.items())[:MAX_CONTAINER])
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for attr in (slots,) if isinstance(slots, str) else slots:
            desc = cls.__dict__.get(attr)
            if type(desc).__name__ != "member_descriptor" or len(out) >= MAX_CONTAINER:
                continue
            try:
                out.append((attr, desc.__get__(value, cls)))
            except AttributeError:  # a slot never set
                continue
    return out


def find_names(match: Callable[[Any], bool], frames: list[types.FrameType] | None = None,
               first_only: bool = False) -> list[NameHit]:
    """Every user name whose value satisfies `match`, innermost frame first."""
    frames = frames if frames is not None else live_user_frames()[0:]
    hits: list[NameHit] = []
    seen_globals: set[int] = set()
    for f in frames:
        fr = Frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        for name, value, scope in candidates(f):
            if scope == "global":
                key = id(f.f_globals)
                if key in seen_globals and f.f_locals is not f.f_globals:
                    continue
            for n, v, sc in _expand(name, value, scope):
                try:
                    ok = match(v)
                except Exception:
                    ok = False
                if ok:
                    hits.append(NameHit(n, fr, sc, v))
                    if first_only:
                        return hits
        seen_globals.add(id(f.f_globals))
    return hits


def find_name(match: Callable[[Any], bool], frames: list[types.FrameType] | None = None) -> NameHit | None:
    """The innermost user name whose value satisfies `match`, or None."""
    hits = find_names(match, frames, first_only=True)
    return hits[0] if hits else None


def find_objects(kind: type, frames: list[types.FrameType] | None = None) -> list[tuple[str, Any]]:
    """(name, object) for objects of a type visible in the user's frames (optimizers, modules)."""
    frames = frames if frames is not None else live_user_frames()
    out: list[tuple[str, Any]] = []
    seen: set[int] = set()
    for f in frames:
        for name, value, _ in candidates(f):
            if isinstance(value, kind) and id(value) not in seen:
                seen.add(id(value))
                out.append((name, value))
    return out


def _held_attributes(value: Any) -> list[tuple[str, Any]]:
    """(attribute, value) pairs an object holds in its instance dict, and for a module its
    submodules: what `find_held_object` follows (no user code runs)."""
    if isinstance(value, SKIP_TYPES) or isinstance(value, torch.Tensor):
        return []
    out: list[tuple[str, Any]] = []
    if isinstance(value, torch.nn.Module):
        out.extend(list(value._modules.items())[:MAX_CONTAINER])
    d = getattr(value, "__dict__", None)
    if isinstance(d, dict) and type(value).__module__ != "builtins":
        out.extend((k, v) for k, v in list(d.items())[:MAX_CONTAINER]
                   if not k.startswith("_") and not isinstance(v, (torch.Tensor,) + SKIP_TYPES))
    return out


def find_held_object(target: Any, frames: list[types.FrameType] | None = None,
                     depth: int = 3) -> NameHit | None:
    """A user name for a non-tensor object (an optimizer) held as an attribute a few objects
    deep (`gan.discriminator.optimizer`: a model's own optimizer, inside a trainer object),
    innermost frame first, shortest path first. Report time only: breadth-first over instance
    dicts and submodules, bounded by `depth` and the per-object element limit."""
    frames = frames if frames is not None else live_user_frames()
    for f in frames:
        fr = Frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        level = [(name, value) for name, value, _ in candidates(f)
                 if not isinstance(value, SKIP_TYPES)]
        seen: set[int] = set()
        for _ in range(depth):
            nxt = []
            for name, value in level:
                if id(value) in seen:
                    continue
                seen.add(id(value))
                for attr, v in _held_attributes(value):
                    path = python_path(name, attr) if isinstance(value, torch.nn.Module) and attr.isdigit() \
                        else f"{name}.{attr}"
                    if v is target:
                        return NameHit(path, fr, "attribute", v)
                    nxt.append((path, v))
            level = nxt
            if not level:
                break
    return None


def _child(obj: Any, key: Any) -> Any:
    """`obj.key` / `obj[key]` read without running user code: instance dicts, a module's
    registered parameters, buffers and submodules, plain lists, tuples and dicts. `_MISSING` else."""
    if isinstance(key, str):
        if isinstance(obj, torch.nn.Module):
            for d in (obj._parameters, obj._buffers, obj._modules):
                if key in d:
                    return d[key]
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict) and key in d:
            return d[key]
        return _MISSING
    if isinstance(obj, (list, tuple, dict)) or isinstance(obj, (torch.nn.ModuleList, torch.nn.Sequential)):
        try:
            return obj[key] if not isinstance(obj, torch.nn.Module) else list(obj._modules.values())[key]
        except (IndexError, KeyError, TypeError):
            return _MISSING
    return _MISSING


_MISSING = object()


def _steps(expr: Any) -> list[Any] | None:
    """`self.layers[2].weight` -> ['self', 'layers', ('[', 2), 'weight'] (constants only)."""
    import ast
    out: list[Any] = []
    while True:
        if isinstance(expr, ast.Name):
            out.append(expr.id)
            return out[::-1]
        if isinstance(expr, ast.Attribute):
            out.append(expr.attr)
            expr = expr.value
        elif isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) \
                and isinstance(expr.slice.value, (int, str)):
            out.append(("[", expr.slice.value))
            expr = expr.value
        else:
            return None


def resolve(text: str, frames: list[types.FrameType] | None = None) -> NameHit | None:
    """What an expression the user wrote (`w`, `self.hidden`, `model.fc.weight`, `layers[2]`)
    holds now in the user's frames, innermost first; read without running user code."""
    import ast
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return None
    steps = _steps(tree.body)
    if not steps:
        return None
    frames = frames if frames is not None else live_user_frames()
    for f in frames:
        loc = f.f_locals
        try:
            if steps[0] in loc:
                obj, scope = loc[steps[0]], "global" if loc is f.f_globals else "local"
            elif steps[0] in f.f_globals:
                obj, scope = f.f_globals[steps[0]], "global"
            else:
                continue
        finally:
            _forget_locals(f, loc)
        for s in steps[1:]:
            obj = _child(obj, s[1] if isinstance(s, tuple) else s)
            if obj is _MISSING:
                break
        else:
            return NameHit(text, Frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name),
                           scope if len(steps) == 1 else "attribute", obj)
    return None
