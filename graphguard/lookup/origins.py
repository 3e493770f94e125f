"""Where an object was made, read from the user's source when the guard saw no op make it.

Parameters, modules and tensors built before the guard was entered (or in another module of the
user's package) have no recorded creation site. This finds the line the user wrote instead
(ast over the user's files, at report time only, never per op):

- a parameter or buffer: the line that builds its module, `self.fc = nn.Linear(...)` in the
  owning module's class (or its user-defined bases), `self.w = nn.Parameter(...)` when the user's
  own module registers it, else `model.fc = nn.Linear(...)` or `layer = nn.Linear(...)` in the code
  of the user's frames;
- a module: the same, one level up;
- a plain tensor held by a name: the last line before the frame's current line that assigns that
  name (in the frame's function, then at module level), `self.h = ...` in the class of `self`.
"""
from __future__ import annotations

import ast
import inspect
import types
from typing import Any

import torch

from ..capture.usercode import is_user_class
from ..model import Frame, SourceLoc
from .names import NameHit, resolve
from .owners import user_modules
from .source import (class_attribute_lines, class_of_function, enclosing_scope, name_assignment_lines,
                     statement_at, target_lines)

__all__ = ["origin_of", "origin_of_name", "origin_along", "made_name", "MAX_ORIGIN_MODULES"]

MAX_ORIGIN_MODULES = 2000  # modules looked into per search


def _user_class(cls: type) -> str | None:
    """The source file of a class the user wrote (not torch's, not graphguard's), else None."""
    if not is_user_class(cls):
        return None
    try:
        return inspect.getsourcefile(cls)
    except (TypeError, OSError):
        return None


def _in_class(obj: Any, attr: str) -> SourceLoc | None:
    """`self.<attr> = ...` (or `register_parameter('<attr>', ...)`) in the class of `obj` or a
    user-written base."""
    for cls in type(obj).__mro__:
        file = _user_class(cls)
        if file is None:
            continue
        found = class_attribute_lines(file, cls.__name__, attr)
        if found:
            return found[0]
    return None


def _chain(t: Any, module: torch.nn.Module, budget: list[int]) -> list[tuple[str, Any]] | None:
    """[(attr, object), ...] from `module` down to `t` (a parameter, buffer, plain tensor attribute
    or submodule), or None."""
    parents: dict[int, tuple[Any, str]] = {}
    for mpath, m in module.named_modules():
        budget[0] -= 1
        if budget[0] < 0:
            return None
        for cname, child in m._modules.items():
            if child is not None and id(child) not in parents:
                parents[id(child)] = (m, cname)
        holder, attr = None, None
        if t is m and mpath:
            holder, attr = parents.get(id(m), (None, None))
            chain: list[tuple[str, Any]] = []
            cur = m
        else:
            for name, v in list(m._parameters.items()) + list(m._buffers.items()):
                if v is t:
                    holder, attr = m, name
                    break
            else:
                for name, v in list(vars(m).items()):
                    if v is t and not name.startswith("_"):
                        holder, attr = m, name
                        break
            if holder is None:
                continue
            chain = [(attr, t)]
            cur = m
        if holder is None:
            continue
        # climb from `cur` up to `module`
        while cur is not module:
            up = parents.get(id(cur))
            if up is None:
                return None
            chain.insert(0, (up[1], cur))
            cur = up[0]
        return chain
    return None


def _frame_scope_lines(frame: Frame, target: str) -> list[SourceLoc]:
    """Assignments of `target` in the code of one user frame: its function, then the module."""
    return target_lines(frame.file, frame.line, target)


def _in_holder_class(path: str, frames: list[types.FrameType] | None) -> SourceLoc | None:
    """A module held by a user object (`model.data.embedding`, the data object a dataclass model
    keeps): `self.embedding = ...` in the class of the object that holds it."""
    head, _, attr = path.rpartition(".")
    if not head or not attr.isidentifier():
        return None
    hit = resolve(head, frames)
    if hit is None or isinstance(hit.value, torch.nn.Module):
        return None
    return _in_class(hit.value, attr)


def origin_of(obj: Any, frames: list[types.FrameType] | None = None) -> SourceLoc | None:
    """The line that built `obj` (a parameter, buffer, tensor attribute or module), looked up in the
    user's source through the modules the user's frames hold. None when nothing is found."""
    if not isinstance(obj, (torch.Tensor, torch.nn.Module)):
        return None
    budget = [MAX_ORIGIN_MODULES]
    for root_name, root, fr in user_modules(frames):
        if obj is root:
            found = _frame_scope_lines(fr, root_name)
            if found:
                return found[-1]
            loc = _in_holder_class(root_name, frames)
            if loc is not None:
                return loc
            continue
        chain = _chain(obj, root, budget)
        if budget[0] < 0:
            return None
        if chain is None:
            continue
        # objects along the path: root, chain[0][1], chain[1][1], ...
        objs = [root] + [o for _, o in chain]
        # a tensor the user's own module registers (`self.w = nn.Parameter(...)`): that line
        # a parameter of a torch module: the line that builds the module, one level up; inside
        # torch containers (Sequential, ModuleList): the line that builds the container
        for i in range(len(chain) - 1, -1, -1):
            attr, _ = chain[i]
            holder = objs[i]
            if _user_class(type(holder)) is None:
                continue
            loc = _in_class(holder, attr)
            if loc is not None:
                return loc
        # nothing in a class: `model.fc = nn.Linear(...)` or `layer = nn.Linear(...)` in user code
        path = root_name
        paths = []
        for attr, _ in chain:
            path = f"{path}[{attr}]" if attr.isdigit() else f"{path}.{attr}"
            paths.append(path)
        for p in reversed(paths):
            found = _frame_scope_lines(fr, p)
            if found:
                return found[-1]
        found = _frame_scope_lines(fr, root_name)
        if found:
            return found[-1]
    return None


def origin_in_tree(obj: Any, tree: Any) -> SourceLoc | None:
    """The line that built `obj` (a parameter or a module) read up the module tree
    (capture/modtree.ModuleTree) instead of from the modules the user's frames name: the
    innermost user-written module above it that assigns it, or the layer holding it
    (`self.body = nn.Linear(...)` for `body.weight`), a torch container's members dated by the
    container's line. For a model no name reaches (held in a closure's cell, a slotted object)."""
    if isinstance(obj, torch.Tensor):
        hit = tree.registering(obj)
        if hit is None:
            return None
        holder, attr = hit
    elif isinstance(obj, torch.nn.Module):
        up = tree.parent.get(id(obj))
        if up is None:
            return None
        holder, attr = up
    else:
        return None
    seen: set[int] = set()
    while holder is not None and id(holder) not in seen:
        seen.add(id(holder))
        if _user_class(type(holder)) is not None:
            loc = _in_class(holder, attr)
            if loc is not None:
                return loc
        up = tree.parent.get(id(holder))
        if up is None:
            return None
        holder, attr = up
    return None


def origin_of_name(name: str, frame: Frame, value: Any = None,
                   frames: list[types.FrameType] | None = None) -> SourceLoc | None:
    """The line that assigned `name` (as found in `frame`): `x = ...` before the frame's line,
    `self.h = ...` in the class around the frame's function; for a name inside a module
    (`model.fc.weight`), the module's building line (`origin_of`)."""
    base = name.split("[", 1)[0]
    if "." not in base:
        found = name_assignment_lines(frame.file, frame.line, base)
        if found:
            return found[-1]
    elif base.startswith("self.") and base.count(".") == 1:
        cls = class_of_function(frame.file, enclosing_scope(frame.file, frame.line))
        if cls is not None:
            found = class_attribute_lines(frame.file, cls, base[5:])
            if found:
                return found[0]
    if value is not None:
        loc = origin_of(value, frames)
        if loc is not None:
            return loc
    found = target_lines(frame.file, frame.line, name)
    return found[-1] if found else None


def _passes_along(loc: SourceLoc, others: set[str]) -> bool:
    """Whether the statement at `loc` assigns a value read from one of the `others` names
    (`feats = features`, `x = a if flag else features`): an alias, not where the value was made."""
    stmt = statement_at(loc.file, loc.line)
    value = getattr(stmt, "value", None)
    if value is None:
        return False
    read = {ast.unparse(n) for n in ast.walk(value) if isinstance(n, (ast.Name, ast.Attribute))}
    return bool(read & others)


def made_name(hits: list[NameHit]) -> tuple[NameHit, SourceLoc | None] | None:
    """Of several names for one object made before the guard (innermost first), the one whose
    assignment made it, with that line: a name assigned from another of the names is passed
    along (`feats = features` in the loop), so the other one is how the user wrote it where it
    was made. The innermost hit (and its line, if any) when none is clearly the maker."""
    if not hits:
        return None
    names = {h.name for h in hits}
    first: tuple[NameHit, SourceLoc | None] | None = None
    for h in hits:
        try:
            loc = origin_of_name(h.name, h.frame, h.value)
        except Exception:  # wording only
            loc = None
        if first is None:
            first = (h, loc)
        if loc is not None and not _passes_along(loc, names - {h.name}):
            return h, loc
    return first


def origin_along(root: Any, path: str) -> tuple[str, SourceLoc] | None:
    """For a dotted attribute path under `root` (a DDP module's `module._forward_module.aux_head`),
    the innermost holder along it that is a class the user wrote, as (`self.<attr...>`, the line
    in that class that assigns the attribute). None when no user class holds the path."""
    holder, found = root, None
    parts = [p for p in path.split(".") if p]
    for i, attr in enumerate(parts):
        if _user_class(type(holder)) is not None:
            loc = _in_class(holder, attr)
            if loc is not None:
                found = ("self." + ".".join(parts[i:]), loc)
        try:
            holder = getattr(holder, attr)
        except Exception:
            break
    return found
