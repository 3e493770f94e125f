"""Make trainable tensors and modules reach the optimizer (GG011)."""
from __future__ import annotations

import re
from typing import Any, Iterator

import libcst as cst

from ..tree import loc, subject_name, related, Source, parse_expr, dotted, enclosing, Names, locals_of, self_attr_assigns


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
    do not depend on the call's local values. The other layers the finding's fix-at places name as
    built in the same method (`self.rel_h`, `self.rel_w`) move in the same patch, first: moved one
    by one, each leaves the next reported as new."""
    name = subject_name(f) or ""
    others = [_attr_of(r.get("name") or "") for r in related(f, "fix-at") if r.get("op") == "layer built in forward"]
    # `model.attn.rel_h`, `net[0].gain` (the attribute itself), `model.blocks[1]` (its container)
    for attr in dict.fromkeys(x for x in (_attr_of(name), name.split("[")[0].rsplit(".", 1)[-1]) if x):
        yield from _layer_to_init(src, attr, others)


def _attr_of(name: str) -> str:
    """The attribute a subject's name ends with, indices left out (`net[0].gain` -> `gain`)."""
    return re.sub(r"\[[^\]]*\]", "", name).rsplit(".", 1)[-1]


def _layer_to_init(src: Source, attr: str, others: list[str]) -> Iterator[tuple[str, int, str, str]]:
    for a in self_attr_assigns(src, attr):
        found = _movable(src, a)
        if found is None:
            continue
        fn, cls, init, stmt = found
        together = [stmt]
        for other in dict.fromkeys(o for o in others if o and o != attr):
            for b in self_attr_assigns(src, other):
                m = _movable(src, b)
                if m is not None and m[0] is fn and m[3] not in together:
                    together.append(m[3])
        groups = [together, [stmt]] if len(together) > 1 else [[stmt]]
        for group in groups:
            group = sorted(group, key=src.start)
            moved = [s.with_changes(leading_lines=[ln for ln in s.leading_lines if ln.comment is not None]) for s in group]
            new_fn = fn.with_changes(body=fn.body.with_changes(body=[s for s in fn.body.body if s not in group]))
            if not new_fn.body.body:
                continue
            new_init = init.with_changes(body=init.body.with_changes(body=[*init.body.body, *moved]))
            new_cls = cls.with_changes(body=cls.body.with_changes(
                body=[new_fn if s is fn else new_init if s is init else s for s in cls.body.body]))
            names = ", ".join(f"self.{dotted(s.body[0].targets[0].target).rsplit('.', 1)[-1]}" for s in group)  # type: ignore[union-attr]
            yield ("layers-to-init" if len(group) > 1 else "layer-to-init", src.start(a), src.replace(cls, new_cls),
                   f"build {names} once in __init__")


def _movable(src: Source, a: cst.Assign) -> tuple[Any, Any, Any, cst.SimpleStatementLine] | None:
    """(method, class, its __init__, the statement) when assignment `a` builds a layer in a method
    other than __init__ from values that __init__ can read too (no local of the method)."""
    fn = enclosing(src, a, cst.FunctionDef)
    cls = enclosing(src, fn, cst.ClassDef) if fn is not None else None
    if fn is None or cls is None or fn.name.value == "__init__":
        return None
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    stmt = src.parent.get(a)
    if init is None or not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 \
            or src.parent.get(stmt) is not fn.body:
        return None
    seen = Names()
    a.value.visit(seen)
    if seen.names & locals_of(fn) or not isinstance(a.value, cst.Call):
        return None
    return fn, cls, init, stmt


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
