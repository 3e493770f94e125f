"""Cached parametrizations (GG001): which parametrized tensor a stale graph node is, and where the
user registered that parametrization and turned the cache on.

`torch.nn.utils.parametrize.cached()` computes a parametrized weight once, with history, and
hands the same tensor to every forward inside the `with`: the first backward frees its graph and
the next one runs into it. The cache lives in torch's module-level `_cache` dict keyed by
`(id(module), tensor_name)`; it is read here (never written), at report time only.
"""
from __future__ import annotations

import ast
import linecache
import sys
from dataclasses import dataclass
from typing import Any, Iterable

import torch

from ..model import Frame, SourceLoc

__all__ = ["CachedParametrization", "cached_parametrization"]


@dataclass(frozen=True)
class CachedParametrization:
    name: str  # as written where it was registered: `self.branch.weight`
    registered: SourceLoc | None  # the register_parametrization(...) line
    cached_at: SourceLoc | None  # the `with parametrize.cached():` around the backward


def _cache_key(node: Any) -> tuple[int, str] | None:
    mod = sys.modules.get("torch.nn.utils.parametrize")
    cache = getattr(mod, "_cache", None) if mod is not None else None
    if not isinstance(cache, dict):
        return None
    for key, t in list(cache.items()):
        if isinstance(t, torch.Tensor) and t.grad_fn is node:
            return key
    return None


def _trees(files: Iterable[str]) -> Iterable[tuple[str, ast.Module]]:
    for file in dict.fromkeys(files):
        text = "".join(linecache.getlines(file))
        try:
            tree = ast.parse(text) if text else None
        except (SyntaxError, ValueError):
            continue
        if tree is not None:
            yield file, tree


def _loc(file: str, line: int) -> SourceLoc:
    return SourceLoc(file, line, "", linecache.getline(file, line).strip())


def _registration(files: Iterable[str], tensor_name: str) -> tuple[str, SourceLoc] | None:
    for file, tree in _trees(files):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func).rsplit(".", 1)[-1] == "register_parametrization" \
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                    and node.args[1].value == tensor_name:
                return f"{ast.unparse(node.args[0])}.{tensor_name}", _loc(file, node.lineno)
    return None


def _cached_block(frames: Iterable[Frame]) -> SourceLoc | None:
    """The `with ...cached():` statement around one of the frames' lines."""
    for fr in frames:
        for file, tree in _trees([fr.file]):
            for node in ast.walk(tree):
                if isinstance(node, (ast.With, ast.AsyncWith)) and node.lineno <= fr.line <= (node.end_lineno or 0) \
                        and any(isinstance(it.context_expr, ast.Call)
                                and ast.unparse(it.context_expr.func).rsplit(".", 1)[-1] == "cached"
                                for it in node.items):
                    return _loc(file, node.lineno)
    return None


def cached_parametrization(node: Any, files: list[str], backward_site: Iterable[Frame]) -> CachedParametrization | None:
    """When `node` made a parametrized tensor torch's parametrization cache still holds: its name
    as registered in `files` (the user's source), the registration line and the `cached()` block
    around the backward. None otherwise."""
    key = _cache_key(node)
    if key is None:
        return None
    tensor_name = key[1]
    found = _registration(files, tensor_name)
    name, registered = found if found is not None else (tensor_name, None)
    return CachedParametrization(name, registered, _cached_block(list(backward_site)))
