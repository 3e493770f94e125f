"""Modules kept in a plain list or dict whose members are lists themselves (GG011).

`self.hids = []` filled with `self.hids.append([nn.Linear(a, b), nn.Tanh()])` hides every layer
from `model.parameters()`. The finding's fix-at place (op "ModuleList") is the line that makes
the container; register.py's `register_container` wraps that literal in `nn.ModuleList`, which
is enough when the members are modules, but an `nn.ModuleList` refuses a list as a member
("list is not a Module subclass"). Here each list or tuple literal put into the container (in its
own literal or comprehension, or later by `.append` / `.extend` / `.insert` / `self.hids[k] = ...` in the same class)
is wrapped in an `nn.ModuleList` as well: the nested ModuleLists register their layers, and
iterating or unpacking them (`for linear, act in self.hids`) reads the same modules as before.
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Source, dotted, enclosing, loc, parse_expr, related

__all__ = ["register_nested_container"]

_FILL = ("append", "extend", "insert")


def register_nested_container(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG011 fixed at a container's creation (fix-at op ModuleList): hold the container in an
    nn.ModuleList / nn.ModuleDict and each list of modules put into it in an nn.ModuleList."""
    nn = _nn(src)
    if nn is None:
        return  # neither `torch` nor `nn` is a name in this file
    lines = [loc(r.get("location"))[1] for r in related(f, "fix-at") if r.get("op") in ("ModuleList", "ModuleDict")]
    done: set[int] = set()
    for line in [ln for ln in dict.fromkeys(lines) if ln]:
        stmt = src.statement(line)
        if stmt is None:
            continue
        for small in stmt.body:
            if not isinstance(small, cst.Assign) or len(small.targets) != 1 \
                    or not isinstance(small.value, (cst.List, cst.ListComp, cst.Dict)) or id(small) in done:
                continue
            done.add(id(small))
            target = dotted(small.targets[0].target) or ""
            cls = enclosing(src, small, cst.ClassDef)
            if not target.startswith("self.") or cls is None:
                continue
            kind = "ModuleDict" if isinstance(small.value, cst.Dict) else "ModuleList"
            members = _members(small.value)
            for node in _fills(src, target):
                if enclosing(src, node, cst.ClassDef) is cls:
                    members += _put(node)
            nested = [m for m in members if isinstance(m, (cst.List, cst.Tuple))]
            if not nested:
                continue  # flat: register_container's edit
            swap = set(map(id, nested))  # the nodes live in src.module: their ids are stable

            class Swap(cst.CSTTransformer):
                def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:
                    if original is small.value:
                        return cst.Call(func=parse_expr(f"{nn}.{kind}"), args=[cst.Arg(updated)])
                    return _wrapped(nn, updated) if id(original) in swap else updated  # type: ignore[arg-type]

            yield (f"nested-{kind.lower()}", src.start(small), src.module.visit(Swap()).code,
                   f"{target} = nn.{kind}(...), each list of layers in it an nn.ModuleList")


def _wrapped(nn: str, value: cst.List | cst.Tuple) -> cst.Call:
    inner = cst.List(elements=list(value.elements), lbracket=getattr(value, "lbracket", cst.LeftSquareBracket()),
                     rbracket=getattr(value, "rbracket", cst.RightSquareBracket()))
    return cst.Call(func=parse_expr(f"{nn}.ModuleList"), args=[cst.Arg(inner)])


def _members(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(value, cst.List):
        return [e.value for e in value.elements if isinstance(e, cst.Element)]
    if isinstance(value, cst.ListComp):
        return [value.elt]  # `[[nn.Linear(a, b), nn.ReLU()] for a, b in ...]`
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    return []


def _fills(src: Source, target: str) -> list[cst.CSTNode]:
    """`target.append(...)` / `.extend(...)` / `.insert(...)` calls and `target[k] = ...` assignments."""
    out: list[cst.CSTNode] = []
    for call in src.nodes(cst.Call):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _FILL \
                and dotted(call.func.value) == target and call.args:
            out.append(call)
    for a in src.nodes(cst.Assign):
        if any(isinstance(t.target, cst.Subscript) and dotted(t.target.value) == target for t in a.targets):
            out.append(a)
    return out


def _put(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The values `node` puts into the container (the elements of an `extend([...])`)."""
    if isinstance(node, cst.Assign):
        return [node.value]
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    value = node.args[-1].value
    if node.func.attr.value == "extend" and isinstance(value, (cst.List, cst.Tuple)):
        return [e.value for e in value.elements if isinstance(e, cst.Element)]
    return [value]


def _nn(src: Source) -> str | None:
    """How this file reaches torch.nn: `torch.nn` when `torch` is imported, else `nn` when
    `import torch.nn as nn` or `from torch import nn` binds it."""
    for imp in src.nodes(cst.Import):
        for alias in imp.names:
            if dotted(alias.name) in ("torch", "torch.nn") and alias.asname is None:
                return "torch.nn"
            if dotted(alias.name) == "torch.nn" and alias.asname is not None and dotted(alias.asname.name) == "nn":
                return "nn"
    for imp in src.nodes(cst.ImportFrom):
        if imp.module is not None and dotted(imp.module) == "torch" and not isinstance(imp.names, cst.ImportStar):
            if any(dotted(a.name) == "nn" and a.asname is None for a in imp.names):
                return "nn"
    return None
