"""A value computed again every iteration that comes back from a cache (GG001, GG003).

The statement that makes the subject runs in every iteration, yet the tensor it gets is the one
of an earlier iteration, whose graph a backward freed: the call returns a cached result. Two
common caches do that when their input is the same object again (a parameter stepped in place):
a `torch.distributions` (or Pyro) transform built with `cache_size=1`, which hands back its last
output for the same input, and a function decorated with `functools.lru_cache` / `functools.cache`.
The edit turns the cache off (`cache_size=0`, the decorator dropped), so the value is computed,
with a fresh graph, each time it is asked for.
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Source, dotted, loc, related, subject_name

__all__ = ["uncache_call"]

_CACHES = ("lru_cache", "cache", "functools.lru_cache", "functools.cache")


def uncache_call(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG001/GG003: the subject is assigned from a call whose callee caches its result: a
    transform object built with `cache_size=N` (N != 0), or a cached function; turn the cache off."""
    name = subject_name(f) or ""
    lines = [loc((f.get("subject") or {}).get("created_at"))[1]]
    lines += [loc(r.get("location"))[1] for r in related(f, "fix-at")]
    seen: set[int] = set()
    for line in [ln for ln in dict.fromkeys(lines) if ln]:
        stmt = src.statement(line)
        if stmt is None:
            continue
        for small in stmt.body:
            if not isinstance(small, cst.Assign) or not isinstance(small.value, cst.Call) \
                    or not any((dotted(t.target) or "") == name for t in small.targets):
                continue
            callee = dotted(small.value.func) or ""
            # `t(x)`, and a transform's own methods that read the same cache (`t.inv(y)`)
            for holder in dict.fromkeys([callee, callee.rsplit(".", 1)[0] if "." in callee else ""]):
                if not holder:
                    continue
                for built, kw in _built_with_cache(src, holder):
                    if id(kw) in seen:
                        continue
                    seen.add(id(kw))
                    new = kw.with_changes(value=cst.Integer("0"))
                    yield ("uncache-transform", src.start(built), src.replace(kw, new),
                           f"{holder} built with cache_size=0: computed again at every call")
                for fn, deco in _cached_def(src, holder):
                    if id(deco) in seen:
                        continue
                    seen.add(id(deco))
                    new_fn = fn.with_changes(decorators=[d for d in fn.decorators if d is not deco])
                    yield ("uncache-function", src.start(fn), src.replace(fn, new_fn),
                           f"{holder} without its cache decorator: computed again at every call")


def _built_with_cache(src: Source, holder: str) -> list[tuple[cst.Call, cst.Arg]]:
    """(constructor call, its cache_size argument) of the assignments that bind `holder` to an
    object built with a cache size other than 0."""
    out = []
    for a in src.nodes(cst.Assign):
        if not isinstance(a.value, cst.Call) or not any(dotted(t.target) == holder for t in a.targets):
            continue
        for arg in a.value.args:
            if arg.keyword is not None and arg.keyword.value == "cache_size" \
                    and not (isinstance(arg.value, cst.Integer) and arg.value.value == "0"):
                out.append((a.value, arg))
    return out


def _cached_def(src: Source, holder: str) -> list[tuple[cst.FunctionDef, cst.Decorator]]:
    """(function, its cache decorator) for a function named `holder` (or `self.holder`'s method)."""
    short = holder.split(".")[-1]
    if "." in holder and not holder.startswith("self."):
        return []
    out = []
    for fn in src.nodes(cst.FunctionDef):
        if fn.name.value != short:
            continue
        for d in fn.decorators:
            target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            if (dotted(target) or "") in _CACHES:
                out.append((fn, d))
    return out
