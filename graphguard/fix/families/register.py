"""Make trainable tensors and modules reach the optimizer (GG011)."""
from __future__ import annotations

import re
from typing import Any, Iterator

import libcst as cst

from ..tree import loc, subject_name, Source, parse_expr, dotted, enclosing, Names, locals_of, self_attr_assigns


def register_parameter(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG011: make an attribute tensor an nn.Parameter, so model.parameters() holds it."""
    if (f.get("subject") or {}).get("kind") == "module":
        return  # a layer is registered already once assigned to a module: nn.Parameter is not its fix
    name = subject_name(f) or ""
    line = loc((f.get("subject") or {}).get("created_at"))[1]
    attr = name.rsplit(".", 1)[-1]
    for a in src.nodes(cst.Assign, line) if line else []:
        for t in a.targets:
            d = dotted(t.target) or ""
            if d.startswith("self.") and d.rsplit(".", 1)[-1] == attr:
                yield ("register-parameter", line, src.replace(a.value, cst.Call(func=parse_expr("torch.nn.Parameter"), args=[cst.Arg(a.value)])),
                       f"make {d} an nn.Parameter")


def register_container(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG011: modules or tensors kept in a plain list/dict attribute are invisible to
    model.parameters(): hold them in nn.ModuleList / nn.ParameterList / nn.ModuleDict."""
    name = subject_name(f) or ""
    attr = name.split("[")[0].rsplit(".", 1)[-1]
    line = loc((f.get("subject") or {}).get("created_at"))[1]
    for a in self_attr_assigns(src, attr):
        if line and not src.start(a) <= line <= src.end(a):
            continue
        v = a.value
        if isinstance(v, (cst.List, cst.ListComp, cst.Tuple)):
            for kind in ("ModuleList", "ParameterList"):
                yield (f"{kind.lower()}", src.start(a), src.replace(v, cst.Call(func=parse_expr(f"torch.nn.{kind}"), args=[cst.Arg(v)])),
                       f"self.{attr} = nn.{kind}([...])")
        elif isinstance(v, (cst.Dict, cst.DictComp)):
            for kind in ("ModuleDict", "ParameterDict"):
                yield (f"{kind.lower()}", src.start(a), src.replace(v, cst.Call(func=parse_expr(f"torch.nn.{kind}"), args=[cst.Arg(v)])),
                       f"self.{attr} = nn.{kind}({{...}})")


def layer_to_init(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG011: a layer built in forward (or another method) is new at every call and never reaches the
    optimizer made from model.parameters(): build it once at the end of __init__, when its arguments
    do not depend on the call's local values."""
    name = subject_name(f) or ""
    attr = name.split("[")[0].rsplit(".", 1)[-1]
    if not attr:
        return
    for a in self_attr_assigns(src, attr):
        fn = enclosing(src, a, cst.FunctionDef)
        cls = enclosing(src, fn, cst.ClassDef) if fn is not None else None
        if fn is None or cls is None or fn.name.value == "__init__":
            continue
        init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        stmt = src.parent.get(a)
        if init is None or not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 \
                or src.parent.get(stmt) is not fn.body:
            continue
        seen = Names()
        a.value.visit(seen)
        if seen.names & locals_of(fn) or not isinstance(a.value, cst.Call):
            continue
        moved = stmt.with_changes(leading_lines=[ln for ln in stmt.leading_lines if ln.comment is not None])
        new_fn = fn.with_changes(body=fn.body.with_changes(body=[s for s in fn.body.body if s is not stmt]))
        new_init = init.with_changes(body=init.body.with_changes(body=[*init.body.body, moved]))
        new_cls = cls.with_changes(body=cls.body.with_changes(
            body=[new_fn if s is fn else new_init if s is init else s for s in cls.body.body]))
        if not new_fn.body.body:
            continue
        yield ("layer-to-init", src.start(a), src.replace(cls, new_cls), f"build self.{attr} once in __init__")


def add_to_optimizer(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG011: the tensor (or the module holding it) is not in the optimizer's parameters: add it to
    the list the optimizer is built from. Which spelling works (the tensor, or its owner's
    parameters) is left to the verification run."""
    name = subject_name(f) or ""
    if not name or "[" in name or "(" in name:
        return  # an element, or a layer built inline (`nn.Linear(4, 2)(x)`): not a name to list
    owner = name.rsplit(".", 1)[0] if "." in name else ""
    anchor = loc(f.get("location"))[1] or 0
    opts = [c for c in src.nodes(cst.Call) if re.fullmatch(r"(torch\.)?optim\.[A-Z]\w*", dotted(c.func) or "")
            and c.args and c.args[0].keyword is None]
    for call in sorted(opts, key=lambda c: abs(src.start(c) - anchor))[:2]:
        fn = enclosing(src, call, cst.FunctionDef)
        if name.startswith("self.") and (fn is None or not fn.params.params
                                         or fn.params.params[0].name.value != "self"):
            continue  # `self.x` is not a name where this optimizer is built
        first = call.args[0].value
        if isinstance(first, cst.Dict) or (isinstance(first, cst.List) and any(
                isinstance(e, cst.Element) and isinstance(e.value, cst.Dict) for e in first.elements)):
            continue  # parameter groups: optimizer.add_param_group's business (families/optimizer.py)
        spread = src.code(first) if isinstance(first, cst.List) else f"*{src.code(first)}"
        if isinstance(first, cst.List):
            spread = spread.strip()[1:-1].rstrip().rstrip(",")
        for extra in ([f"*{name}.parameters()", name] if not owner else [name, f"*{owner}.parameters()"]):
            if extra.lstrip("*") in spread:
                continue
            new = call.with_changes(args=[call.args[0].with_changes(value=parse_expr(f"[{spread}, {extra}]")), *call.args[1:]])
            yield ("add-to-optimizer", src.start(call), src.replace(call, new), f"optimize {extra.lstrip('*')} too")
