"""Module-structure questions the parameter rules share (GG008, GG011): which module of the user's
model holds a set of parameters, what the user called it where it was built.

Report time or first-sighting time only: each call walks a model's `named_modules()` once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import torch

from ...lookup.names import python_path
from ...lookup.origins import origin_of
from ...lookup.source import assigned_targets
from ...model import SourceLoc

__all__ = ["ModuleChain", "chain_to", "is_container", "smallest_holder", "written_module_name"]


@dataclass
class ModuleChain:
    """The modules from a root down to the module that registers one parameter, root first."""

    paths: list[str]  # `named_modules()` paths ("" for the root)
    modules: list[torch.nn.Module]

    def python_path(self, root_name: str, i: int) -> str:
        return python_path(root_name, self.paths[i])


def chain_to(root: torch.nn.Module, p: torch.Tensor) -> ModuleChain | None:
    """The chain of modules from `root` down to the one whose `_parameters` holds `p`."""
    by_path: dict[str, torch.nn.Module] = {}
    holder = None
    for path, m in root.named_modules():
        by_path[path] = m
        if holder is None and any(v is p for v in m._parameters.values()):
            holder = path
    if holder is None:
        return None
    parts = holder.split(".") if holder else []
    paths = [""] + [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return ModuleChain(paths, [by_path[x] for x in paths])


def smallest_holder(top: torch.nn.Module, leaves: Iterable[torch.Tensor]) -> tuple[str, torch.nn.Module]:
    """The deepest submodule of `top` (path, module) whose parameters include all of `leaves`."""
    want = {id(v) for v in leaves}
    best = ("", top)
    depth = -1
    for path, m in top.named_modules():
        d = path.count(".") if path else -1
        if d > depth and want <= {id(q) for q in m.parameters()}:
            best, depth = (path, m), d
    return best


def is_container(m: Any) -> bool:
    """A torch container (Sequential, ModuleList, ModuleDict): its layers are built inline, on the
    line that builds the container, and have no name of their own."""
    return isinstance(m, (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict))


def written_module_name(module: torch.nn.Module, parent: torch.nn.Module | None = None
                        ) -> tuple[str | None, SourceLoc | None]:
    """The name the user wrote where `module` was built (`self.classifier` for `self.classifier =
    nn.Linear(...)`, `metric_fc` for `metric_fc = ArcMarginProduct(...)`), and that line. A layer
    built inline in a container (`parent`, `nn.Sequential(nn.Conv2d(...), ...)`) has no name of
    its own: (None, the container's line). Needs the user's frames to be live (report time)."""
    try:
        made = origin_of(module)
        if made is None:
            return None, None
        if parent is not None and is_container(parent) and origin_of(parent) == made:
            return None, made
        targets = assigned_targets(made.file, made.line)
    except Exception:  # wording only: a look-up never fails a finding
        return None, None
    return (targets[0] if len(targets) == 1 else None), made
