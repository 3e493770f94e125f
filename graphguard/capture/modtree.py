"""The live modules and how they nest, read from the collector: which module registers a
parameter, which module registers a module, and the chain up to a model no module registers.

Run-time evidence for the rules that group parameters by the layer that holds them (GG008) or ask
whether a tensor belongs to a model at all (GG011), whatever holds the model and whether any name
reaches it: a model in a closure, in a slotted dataclass, or three helpers deep is found the same
as `model` in the training loop's frame.

One pass over the collector's objects per tree: build it when a finding is about to be made or
dropped (a step whose parameters got no gradient, an optimizer's construction), never per step.
A tree holds the modules strongly: the caller drops it before the user's code runs again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import torch

from .kept import live_instances

__all__ = ["ModuleTree", "module_tree"]


@dataclass
class ModuleTree:
    """Every live `nn.Module` with its registered children and parameters, indexed by id.

    `parent[id(m)]` is (the module that registers `m`, the attribute or key); `owner[id(p)]` is
    (the module that registers parameter `p` itself, its attribute). A module registered by two
    parents (a shared layer) keeps the first one the collector lists. `modules` lists them all,
    roots and children, in the collector's order."""

    modules: list[torch.nn.Module] = field(default_factory=list)
    parent: dict[int, tuple[torch.nn.Module, str]] = field(default_factory=dict)
    owner: dict[int, tuple[torch.nn.Module, str]] = field(default_factory=dict)

    def registering(self, p: Any) -> tuple[torch.nn.Module, str] | None:
        """(module, attribute) of the module that registers `p` as its own parameter."""
        return self.owner.get(id(p))

    def parent_of(self, m: torch.nn.Module) -> torch.nn.Module | None:
        """The module that registers `m` as a child; None for a model's root."""
        hit = self.parent.get(id(m))
        return hit[0] if hit is not None else None

    def ancestors(self, m: torch.nn.Module) -> Iterator[torch.nn.Module]:
        """The modules above `m`, nearest first, up to its root (a cycle ends the walk)."""
        seen = {id(m)}
        up = self.parent_of(m)
        while up is not None and id(up) not in seen:
            seen.add(id(up))
            yield up
            up = self.parent_of(up)

    def root_of(self, m: torch.nn.Module) -> torch.nn.Module:
        """The outermost module above `m` (itself when nothing registers it)."""
        top = m
        for top in self.ancestors(m):
            pass
        return top

    def path_of(self, m: torch.nn.Module) -> str:
        """The registration keys from `m`'s root down to `m` (`encoder.layers.0`; "" for a root):
        the object graph's own keys, to tell two places of one model apart."""
        return ".".join(self.parent[id(c)][1] for c in self.chain_to(m)[1:])

    def chain_to(self, m: torch.nn.Module) -> list[torch.nn.Module]:
        """The modules from `m`'s root down to `m`, root first."""
        return [*reversed(list(self.ancestors(m))), m]

    def is_root(self, m: torch.nn.Module) -> bool:
        return id(m) not in self.parent


def module_tree() -> ModuleTree:
    """The tree of every live module (one pass over the collector's objects)."""
    tree = ModuleTree(modules=live_instances(torch.nn.Module))
    for m in tree.modules:
        children = m.__dict__.get("_modules") or {}
        for k, c in children.items():
            if c is not None:
                tree.parent.setdefault(id(c), (m, k))
        params = m.__dict__.get("_parameters") or {}
        for k, p in params.items():
            if p is not None:
                tree.owner.setdefault(id(p), (m, k))
    return tree
