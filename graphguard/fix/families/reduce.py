"""Reduce a non-scalar loss before backward (GG012)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, subject_name, Source, method_call, assign_of, backward_calls


def _is_none_reduction(arg: cst.Arg) -> bool:
    if arg.keyword is None:
        return False
    if arg.keyword.value == "reduction" and isinstance(arg.value, cst.SimpleString):
        return arg.value.evaluated_value == "none"  # type: ignore[comparison-overlap]
    if arg.keyword.value in ("reduce", "size_average") and isinstance(arg.value, cst.Name):
        return arg.value.value == "False"
    return False


def reduce_loss(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG012: backward of a non-scalar loss. Reduce it with `.mean()` where backward is called or where
    the loss is made, or ask the loss function for its mean (drop reduction='none' / reduce=False)."""
    name = subject_name(f)
    line = loc(f.get("location"))[1]
    for call in backward_calls(src, line) if line else []:
        # keyword options (retain_graph=...) stay; a gradient= argument already weights every element
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward" \
                and all(a.keyword is not None and a.keyword.value != "gradient" for a in call.args):
            base = call.func.value
            yield ("mean-at-backward", line, src.replace(base, method_call(base, "mean")),
                   f"{src.code(base)}.mean().backward()")
    created = loc((f.get("subject") or {}).get("created_at"))[1]
    # a subject of kind "call" is the loss function (a module), not the tensor: never `RankLoss().mean()`
    tensor = (f.get("subject") or {}).get("kind") != "call"
    hit = assign_of(src, name, created) if name and created and tensor else None
    if hit:
        _, assign = hit
        yield ("mean-at-creation", created, src.replace(assign.value, method_call(assign.value, "mean")),
               f"{name} = (...).mean()")
    # loss functions asked for per-element losses, nearest the loss first
    anchor = created or line or 0
    found = []
    for call in src.nodes(cst.Call):
        bad = [a for a in call.args if _is_none_reduction(a)]
        if bad:
            found.append((abs(src.start(call) - anchor), call, bad))
    for _, call, bad in sorted(found, key=lambda t: t[0]):
        args = [a for a in call.args if not any(a is b for b in bad)]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        yield ("mean-reduction", src.start(call), src.replace(call, call.with_changes(args=args)),
               "the loss function's default reduction (mean)")
