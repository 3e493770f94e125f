"""Inference mode where a gradient is taken inside it (GG014): `torch.no_grad()` instead.

Tensors made under `torch.inference_mode()` have no autograd record at all, and
`torch.enable_grad()` inside the region does not bring it back, so a `torch.autograd.grad` (a
Jacobian check in an evaluation step) fails there. `torch.no_grad()` turns gradients off the same
way for the rest of the region, but lets the inner `enable_grad()` record a graph. The rule's
fix-at entry (op `torch.inference_mode()`) names the `with` statement; the inference-mode call is
either one of its items, or the value of the name it enters (`context = torch.inference_mode() if
... else torch.no_grad()`, assigned before it in the same function), or a decorator.
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Source, dotted, enclosing, loc, parse_expr, related

__all__ = ["no_grad_for_inference_mode"]


def _inference_calls(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class Visit(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            if (dotted(call.func) or "").split(".")[-1] == "inference_mode" and not any(
                    a.keyword is None and not (isinstance(a.value, cst.Name) and a.value.value == "True")
                    for a in call.args):
                found.append(call)  # inference_mode(False) turns it off: not what is asked

    node.visit(Visit())
    return found


def no_grad_for_inference_mode(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG014 under inference mode: the `torch.inference_mode()` of the region the finding names
    becomes `torch.no_grad()`."""
    for r in related(f, "fix-at"):
        line = loc(r.get("location"))[1]
        if not line or "inference_mode" not in (r.get("op") or ""):
            continue
        calls: list[cst.Call] = []
        for w in src.nodes(cst.With, line):
            if src.start(w) != line:
                continue
            for item in w.items:
                calls += _inference_calls(item.item)
                name = dotted(item.item)
                if name and not calls:
                    # the name the `with` enters: its last assignment before, in the same function
                    fn = enclosing(src, w, cst.FunctionDef)
                    before = [a for a in src.nodes(cst.Assign) if src.start(a) < line
                              and enclosing(src, a, cst.FunctionDef) is fn
                              and any(dotted(t.target) == name for t in a.targets)]
                    if before:
                        calls += _inference_calls(before[-1].value)
        for d in src.nodes(cst.Decorator, line):
            calls += _inference_calls(d.decorator)
        for call in calls:
            torch = (dotted(call.func) or "torch.inference_mode").rsplit(".", 1)
            new = parse_expr(f"{torch[0]}.no_grad()" if len(torch) == 2 else "no_grad()")
            old: cst.CSTNode = call
            choice = src.parent.get(call)
            if isinstance(choice, cst.IfExp):
                other = choice.orelse if choice.body is call else choice.body
                if src.code(other).strip() == src.module.code_for_node(new).strip():
                    old = choice  # `inference_mode() if flag else no_grad()`: no_grad either way
            yield ("no-grad-for-inference-mode", src.start(call), src.replace(old, new),
                   "torch.no_grad() instead of inference mode, so that enable_grad() inside records the graph")
