"""Naming a DDP module's parameters as the program writes them (GG017, GG018): description only.

The reducer knows its parameters by index ("Parameter indices which did not receive grad for
rank 0: 2 3"); the window (capture/ddp.py) keeps each index's name in `named_parameters()` of the
DDP module (`module.aux_head.weight`). Here the DDP module's own name in the user's frames is put
in front (`model.module.aux_head`), and the parameters are grouped by the layer that holds them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...capture.ddp import DdpWindow
from ...lookup.origins import origin_along
from ...model import Related, Role, SourceLoc, Subject
from ..context import RuleContext

__all__ = ["ParamGroup", "groups_of", "ddp_name", "group_subject", "group_related", "module_subject", "optimizes"]


@dataclass
class ParamGroup:
    """Parameters of one layer: `module.aux_head` with `weight` and `bias`."""

    path: str  # the layer's path under the DDP module, `module.aux_head` ('' for its own)
    attrs: list[str]
    indices: list[int]  # the reducer's indices


def groups_of(window: DdpWindow, indices: list[int]) -> list[ParamGroup]:
    out: dict[str, ParamGroup] = {}
    for i in indices:
        path, _, attr = window.names[i].rpartition(".")
        g = out.setdefault(path, ParamGroup(path, [], []))
        g.attrs.append(attr)
        g.indices.append(i)
    return list(out.values())


def ddp_name(ctx: RuleContext, window: DdpWindow) -> str | None:
    """The user's name of the DDP module (`model`), when a frame holds it."""
    module = window.module()
    hit = ctx.name_of(module) if module is not None else None
    return hit.name if hit is not None else None


def _full(owner: str | None, path: str) -> str | None:
    if owner is None:
        return None
    return f"{owner}.{path}" if path else owner


def describe_indices(window: DdpWindow, indices: list[int], owner: str | None) -> str:
    """`model.module.aux_head (weight, bias)`; without the module's name, the reducer's own terms:
    `parameters 4, 5 of the DDP module (module.aux_head.weight, ...)`."""
    parts = []
    for g in groups_of(window, indices):
        found = in_user_class(window, g.path) if owner is None else None
        name = _full(owner, g.path) or (f"`{found[0]}`" if found else None) or (g.path or "the DDP module")
        parts.append(f"{name} ({', '.join(g.attrs)})")
    text = "; ".join(parts)
    if owner is None:
        text += f" (parameter indices {' '.join(str(i) for i in indices)} of the DDP module)"
    return text


def in_user_class(window: DdpWindow, path: str) -> tuple[str, SourceLoc] | None:
    """`self.aux_head` and the line of the user's class that assigns it, for a path under the DDP
    module when no frame names the module itself (a trainer holds it: Lightning, Accelerate)."""
    module = window.module()
    if module is None or not path:
        return None
    try:
        return origin_along(module, path)
    except Exception:  # wording only
        return None


def group_subject(ctx: RuleContext, window: DdpWindow, indices: list[int], owner: str | None) -> Subject:
    """The first group as the finding's subject: its name and the line that built its layer."""
    groups = groups_of(window, indices)
    first = groups[0]
    param = window.param(first.indices[0])
    made = _made_at(ctx, param)
    kind = "module" if first.path and len(first.attrs) > 1 else "parameter"
    name = _full(owner, first.path) if kind == "module" else _full(owner, window.names[first.indices[0]])
    if owner is None:  # nobody's frame holds the DDP module: the user's class holds the layer
        found = in_user_class(window, first.path if kind == "module" else window.names[first.indices[0]])
        if found is not None:
            name, made = found[0], made or found[1]
    summary = ", ".join(f"{a} {tuple(p.shape) if (p := window.param(i)) is not None else '?'}"
                        for a, i in zip(first.attrs, first.indices))
    return Subject(name, kind, summary, made, None)


def group_related(ctx: RuleContext, window: DdpWindow, indices: list[int], owner: str | None) -> list[Related]:
    """`made-at` of every other group's layer (the subject's is its created_at)."""
    out = []
    for g in groups_of(window, indices)[1:]:
        made = _made_at(ctx, window.param(g.indices[0]))
        name = _full(owner, g.path)
        if owner is None and (found := in_user_class(window, g.path)) is not None:
            name, made = found[0], made or found[1]
        out.append(Related(Role.MADE_AT, name or g.path, "layer", made))
    return out


def _made_at(ctx: RuleContext, param: object) -> SourceLoc | None:
    if param is None:
        return None
    rec = ctx.leaf_record(param)
    if rec is not None:
        loc = ctx.loc(rec.site)
        if loc is not None:
            return loc
    return ctx.origin(param)


def module_subject(ctx: RuleContext, window: DdpWindow, owner: str | None) -> Subject:
    """The DDP module itself as the subject (`model`, `DistributedDataParallel(Net)`, where built)."""
    module = window.module()
    inner = getattr(module, "module", module)
    built = ctx.origin(module, ctx.name_of(module)) if module is not None else None
    return Subject(owner, "module", f"DistributedDataParallel({type(inner).__name__})", built)


def optimizes(opt: object, window: DdpWindow) -> bool:
    """`opt` holds at least one of the window's parameters."""
    mine = {id(p) for i in range(len(window.params)) if (p := window.param(i)) is not None}
    for group in getattr(opt, "param_groups", ()):
        if any(id(p) in mine for p in group.get("params", ())):
            return True
    return False
