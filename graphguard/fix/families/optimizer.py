"""What the optimizer holds (GG008, GG011): build it over the live model, over the trainable
parameters only, without a module the forward never calls, or with a module it was never given.

Every edit here starts from the finding's `fix-at` place with op "optimizer" (the line that gives
the optimizer its parameters) and the subject's name; none of them changes what is trained
except by handing the optimizer the parameters the finding says it misses or wrongly holds.
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Names, Source, dotted, enclosing, loc, locals_of, parse_expr, related, subject_name

Out = Iterator[tuple[str, int, str, str]]


# ---- shared reading -----------------------------------------------------------------------------
def optimizer_line(f: dict[str, Any]) -> int | None:
    """The line that gives the optimizer its parameters (the finding's fix-at with op optimizer)."""
    for r in related(f, "fix-at"):
        if r.get("op") == "optimizer":
            line = loc(r.get("location"))[1]
            if line:
                return line
    return None


def frozen_subject(f: dict[str, Any]) -> bool:
    """The subject is a leaf with requires_grad=False (its summary carries no requires_grad mark)."""
    summary = (f.get("subject") or {}).get("summary") or ""
    return bool(summary) and "requires_grad" not in summary and "grad_fn" not in summary


def _reads(node: cst.CSTNode) -> set[str]:
    seen = Names()
    node.visit(seen)
    return seen.names


def _param_groups(arg: cst.BaseExpression) -> list[cst.Element] | None:
    """The elements of `[{'params': ...}, ...]`, or None when `arg` is not such a list."""
    if not isinstance(arg, cst.List) or not arg.elements:
        return None
    if all(isinstance(e, cst.Element) and isinstance(e.value, cst.Dict) for e in arg.elements):
        return list(arg.elements)  # type: ignore[arg-type]
    return None


def _group_params(group: cst.Dict) -> cst.BaseExpression | None:
    for e in group.elements:
        if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString) \
                and e.key.evaluated_value == "params":
            return e.value
    return None


def _optimizer_calls(src: Source, line: int) -> list[cst.Call]:
    """Calls on `line`'s statement that take parameters first: `SGD(model.parameters(), ...)`,
    `Adam([{'params': ...}], ...)` (outermost first)."""
    stmt = src.statement(line)
    if stmt is None:
        return []
    out = []
    for call in src.nodes(cst.Call):
        if src.statement(src.start(call)) is not stmt or not call.args or call.args[0].keyword is not None:
            continue
        name = (dotted(call.func) or "").rsplit(".", 1)[-1]
        if name[:1].isupper():  # a class: the optimizer's constructor (torch's or the user's)
            out.append(call)
    return out


def _is_parameters_call(node: cst.BaseExpression, of: str | None = None) -> bool:
    """`x.parameters()` (of `of`, when given)."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
        and node.func.attr.value == "parameters" and not node.args \
        and (of is None or (dotted(node.func.value) or "") == of)


def _with_element(lst: cst.List, new: cst.Element) -> cst.List:
    """`lst` with `new` appended, in the list's own layout (one element per line stays so)."""
    els = list(lst.elements)
    last = els[-1]
    sep = els[-2].comma if len(els) > 1 and isinstance(els[-2].comma, cst.Comma) \
        else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    els[-1] = last.with_changes(comma=sep)
    els.append(new.with_changes(comma=last.comma))
    return lst.with_changes(elements=els)


# ---- GG008: the optimizer holds another instance --------------------------------------------------
def optimizer_after_model(src: Source, f: dict[str, Any], file: str) -> Out:
    """GG008 (none of the optimizer's parameters reached a backward): the model's name was bound
    to a new instance after the optimizer was built over the old one. Move the statement that
    builds the optimizer (or the object whose __init__ builds it) after that last rebinding, in the
    same block, so it holds the model the loss is computed from."""
    name = subject_name(f) or ""
    line = optimizer_line(f)
    if not name or "[" in name or line is None or frozen_subject(f):
        return
    root = name.split(".")[0]
    stmt = src.statement(line)
    if stmt is None:
        return
    builders = [stmt] if root in _reads(stmt) else []
    fn = enclosing(src, stmt, cst.FunctionDef)
    cls = enclosing(src, fn, cst.ClassDef) if fn is not None and fn.name.value == "__init__" else None
    if cls is not None and (not builders or root in locals_of(fn)):
        # the optimizer is built inside a class's __init__ from its arguments: the statements
        # that construct that class with the model
        for call in src.nodes(cst.Call):
            if (dotted(call.func) or "").rsplit(".", 1)[-1] == cls.name.value \
                    and any(root in _reads(a.value) for a in call.args):
                s = src.statement(src.start(call))
                if s is not None and s not in builders:
                    builders.append(s)
    for s in builders:
        yield from _move_after_rebinding(src, s, name)


def _move_after_rebinding(src: Source, s: cst.SimpleStatementLine, name: str) -> Out:
    block = src.parent.get(s)
    body = list(getattr(block, "body", ()))
    if s not in body:
        return
    i = body.index(s)
    binds = {dotted(t.target) or "" for small in s.body if isinstance(small, cst.Assign) for t in small.targets}
    binds = {b.split(".")[0] for b in binds if b}
    if not binds:
        return
    later = [j for j in range(i + 1, len(body)) if isinstance(body[j], cst.SimpleStatementLine)
             and any(isinstance(x, cst.Assign) and any(dotted(t.target) == name for t in x.targets)
                     for x in body[j].body)]
    if not later:
        return
    j = later[-1]
    for between in body[i + 1:j + 1]:
        if isinstance(between, (cst.FunctionDef, cst.ClassDef)):
            continue  # defined, not run: it reads the optimizer when called, after the move
        if binds & _reads(between):
            return  # something in between uses what the statement builds
    moved = s.with_changes(leading_lines=[])
    new_body = body[:i] + body[i + 1:j + 1] + [moved] + body[j + 1:]
    if i + 1 < len(body):  # the statement's blank lines stay where they were
        new_body[i] = new_body[i].with_changes(leading_lines=[*s.leading_lines, *new_body[i].leading_lines])
    new_block = block.with_changes(body=new_body)  # type: ignore[union-attr]
    text = new_block.code if isinstance(block, cst.Module) else src.replace(block, new_block)  # type: ignore[arg-type]
    yield ("optimizer-after-model", src.start(s), text,
           f"build it after the last `{name} = ...`, over the instance the loss uses")


# ---- GG008: the optimizer holds frozen parameters -------------------------------------------------
def trainable_only(src: Source, f: dict[str, Any], file: str) -> Out:
    """GG008 on a frozen parameter (requires_grad=False) the optimizer holds and whose missing
    .grad its step reads: give the optimizer only the trainable parameters. What is frozen stays
    frozen; the optimizer just no longer steps it."""
    line = optimizer_line(f)
    if line is None or not frozen_subject(f):
        return
    for call in _optimizer_calls(src, line)[:1]:
        first = call.args[0].value
        groups = _param_groups(first)
        targets = [p for g in groups for p in [_group_params(g.value)] if p is not None] if groups else [first]  # type: ignore[attr-defined]
        if not targets or any("requires_grad" in src.code(t) for t in targets):
            continue
        new = call
        for t in targets:
            new = new.deep_replace(t, parse_expr(f"filter(lambda p: p.requires_grad, {src.code(t).strip()})"))  # type: ignore[assignment]
        yield ("trainable-only", src.start(call), src.replace(call, new),
               "give the optimizer only the parameters with requires_grad")


# ---- GG008: a module the forward never calls ------------------------------------------------------
def leave_out_unused(src: Source, f: dict[str, Any], file: str) -> Out:
    """GG008 warning (a module never reached a backward while the rest of the model did, no cut
    on its path): the forward does not use it. Drop its own parameter group, or freeze it before
    the optimizer is built; either way it never got a gradient, so training computes the same."""
    name = subject_name(f) or ""
    line = optimizer_line(f)
    if not name or "[" in name or line is None or f.get("severity") != "warning" or related(f, "cut-by"):
        return
    calls = _optimizer_calls(src, line)
    for call in calls[:1]:
        groups = _param_groups(call.args[0].value)
        mine = [g for g in groups or [] if _is_parameters_call(_group_params(g.value), name)]  # type: ignore[arg-type]
        if groups and mine and len(mine) < len(groups):
            lst = call.args[0].value
            kept = [g for g in groups if g not in mine]
            kept[-1] = kept[-1].with_changes(comma=groups[-1].comma)
            yield ("drop-param-group", src.start(mine[0]), src.replace(lst, lst.with_changes(elements=kept)),
                   f"leave {name} out of the optimizer's parameter groups")
    stmt = src.statement(line)
    if stmt is not None and name.split(".")[0] in _reads(stmt):
        freeze = cst.parse_statement(f"{name}.requires_grad_(False)")
        new = cst.FlattenSentinel([freeze.with_changes(leading_lines=stmt.leading_lines),
                                   stmt.with_changes(leading_lines=[])])
        yield ("freeze-unused", line, src.replace(stmt, new),
               f"freeze {name} (never called) before the optimizer is built")


# ---- GG011: a module in no parameter group --------------------------------------------------------
def add_param_group(src: Source, f: dict[str, Any], file: str) -> Out:
    """GG011: the optimizer is built from a list of parameter groups and none holds the module:
    add a group for it (the optimizer's defaults apply to it). A subject named from inside its
    model (`self.features`) is spelled as the other groups reach the model (`net.features`)."""
    name = subject_name(f) or ""
    line = optimizer_line(f)
    if not name or "[" in name or line is None:
        return
    for call in _optimizer_calls(src, line)[:1]:
        lst = call.args[0].value
        groups = _param_groups(lst)
        if not groups:
            continue
        spelled = _spelled_at(src, f, name, [_group_params(g.value) for g in groups])  # type: ignore[attr-defined]
        if spelled is None or any(spelled in src.code(g) for g in groups):
            continue
        new = cst.Element(parse_expr(f"{{'params': {spelled}.parameters()}}"))
        yield ("add-param-group", src.start(call), src.replace(lst, _with_element(lst, new)),  # type: ignore[arg-type]
               f"add a parameter group for {spelled}")


def _spelled_at(src: Source, f: dict[str, Any], name: str, params: list[Any]) -> str | None:
    """`name` as the optimizer's line can read it: unchanged unless it starts with `self.`; then
    with the model the other groups are read from (`net` of `net.fc.parameters()`), when that
    name is bound to an instance of the class the subject was built in; with groups over several
    submodules, through the one whose attribute holds an instance of that class."""
    if not name.startswith("self."):
        return name
    bases = {(dotted(p.func.value) or "").rsplit(".", 1)[0] for p in params if _is_parameters_call(p)}  # type: ignore[union-attr]
    made = loc((f.get("subject") or {}).get("created_at"))[1]
    cls = None
    if made:
        stmt = src.statement(made)
        cls = enclosing(src, stmt, cst.ClassDef) if stmt is not None else None
    if cls is None or "" in bases or not bases:
        return None

    def bound_to_cls(*targets: str) -> bool:
        # one of `targets` is assigned an instance of the class the subject was built in
        return any(isinstance(a.value, cst.Call) and (dotted(a.value.func) or "").rsplit(".", 1)[-1] == cls.name.value
                   and any((dotted(t.target) or "") in targets for t in a.targets)
                   for a in src.nodes(cst.Assign))

    if len(bases) == 1:
        base = next(iter(bases))
        if bound_to_cls(base):
            return base + name[len("self"):]
    # the groups reach several submodules of one model (`self.model.expert.encoder`,
    # `self.model.shared_vae.encoder`): the one that holds an instance of the subject's class
    # (`self.shared_vae = SharedVAE(...)`), read through the same path
    holders = [b for b in sorted(bases) if "." in b and bound_to_cls(b, "self." + b.rsplit(".", 1)[-1])]
    return holders[0] + name[len("self"):] if len(holders) == 1 else None


# ---- GG011: a module built after the optimizer, inside the object that steps it ------------------
def add_param_group_late(src: Source, f: dict[str, Any], file: str) -> Out:
    """GG011: the module was built after the optimizer, by an object (a loss with weights of its
    own) that the class running the step builds and keeps as an attribute: give it to that
    class's optimizer once both exist, at the end of its __init__
    (`self.optimizer.add_param_group({'params': self.loss.classifier.parameters()})`)."""
    name = subject_name(f) or ""
    opt = next((r.get("name") or "" for r in related(f, "fix-at") if r.get("op") == "optimizer"), "")
    made = loc((f.get("subject") or {}).get("created_at"))[1]
    backward = next((loc(r.get("location"))[1] for r in related(f, "reached-by") if loc(r.get("location"))[1]), None)
    if not name.startswith("self.") or "[" in name or not opt.startswith("self.") or not made or not backward:
        return
    built_in = _class_at(src, made)
    stepper = _class_at(src, backward)
    if built_in is None or stepper is None or built_in is stepper:
        return
    init = _method(stepper, "__init__")
    if init is None or not any(dotted(t.target) == opt for a in _assigns(init) for t in a.targets):
        return
    for attr in _holders(stepper, init, built_in.name.value)[:2]:
        add = cst.parse_statement(f"{opt}.add_param_group({{'params': self.{attr}{name[len('self'):]}.parameters()}})")
        body = list(init.body.body)
        new = init.with_changes(body=init.body.with_changes(body=[*body, add]))
        yield ("add-param-group-late", src.start(init), src.replace(init, new),
               f"give {opt} self.{attr}{name[len('self'):]} once both are built")


def _class_at(src: Source, line: int) -> cst.ClassDef | None:
    stmt = src.statement(line)
    return enclosing(src, stmt, cst.ClassDef) if stmt is not None else None


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    return next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)


def _assigns(fn: cst.FunctionDef) -> list[cst.Assign]:
    return [x for s in fn.body.body if isinstance(s, cst.SimpleStatementLine) for x in s.body if isinstance(x, cst.Assign)]


def _builds(value: cst.BaseExpression, cls: str) -> bool:
    return isinstance(value, cst.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1] == cls


def _holders(stepper: cst.ClassDef, init: cst.FunctionDef, cls: str) -> list[str]:
    """Attributes `self.X` that __init__ sets to an instance of `cls`: built there, or returned
    (alone or at a place of a tuple) by one of the class's own methods that builds it."""
    out = []
    for a in _assigns(init):
        for t in a.targets:
            target = t.target
            if _builds(a.value, cls) and (dotted(target) or "").startswith("self."):
                out.append((dotted(target) or "")[5:])
                continue
            fn = a.value.func if isinstance(a.value, cst.Call) else None
            m = _method(stepper, fn.attr.value) if isinstance(fn, cst.Attribute) and dotted(fn.value) == "self" else None
            if m is None:
                continue
            local = {dotted(t2.target) for x in _assigns(m) if _builds(x.value, cls) for t2 in x.targets}
            rets = [x.value for s in m.body.body if isinstance(s, cst.SimpleStatementLine)
                    for x in s.body if isinstance(x, cst.Return) and x.value is not None]
            for r in rets[-1:]:
                parts = [e.value for e in r.elements] if isinstance(r, cst.Tuple) else [r]
                names = [e.value for e in target.elements] if isinstance(target, cst.Tuple) else [target]
                if len(parts) != len(names):
                    continue
                for p, n in zip(parts, names):
                    if (_builds(p, cls) or dotted(p) in local) and (dotted(n) or "").startswith("self."):
                        out.append((dotted(n) or "")[5:])
    return list(dict.fromkeys(out))


# ---- GG011: layers built inside forward, called inline ---------------------------------------------
def inline_layers_to_init(src: Source, f: dict[str, Any], file: str) -> Out:
    """GG011 whose fix-at places say "build in __init__": the forward builds its layers at every
    call (`nn.Linear(a, b)(x)`, or `layer = nn.Linear(a, b)` then `layer(x)`), so they are never
    registered and the optimizer gets none of them. Build each once at the end of the class's
    __init__ as `self.<name>` and call that in forward (all of them in one patch: the optimizer
    needs the whole model). Only layers whose arguments read nothing local to forward move."""
    lines = [loc(r.get("location"))[1] for r in related(f, "fix-at") if r.get("op") == "build in __init__"]
    names = [r.get("name") or "" for r in related(f, "fix-at") if r.get("op") == "build in __init__"]
    if not lines or not all(lines):
        return
    stmt = src.statement(lines[0])  # type: ignore[arg-type]
    fn = enclosing(src, stmt, cst.FunctionDef) if stmt is not None else None
    cls = enclosing(src, fn, cst.ClassDef) if fn is not None else None
    init = _method(cls, "__init__") if cls is not None else None
    if fn is None or cls is None or init is None or fn is init:
        return
    taken = {a.target.attr.value for x in src.nodes(cst.AssignTarget) for a in [x]
             if isinstance(a.target, cst.Attribute) and dotted(a.target.value) == "self"}
    local = locals_of(fn)
    swaps: dict[cst.CSTNode, cst.CSTNode] = {}
    added: list[cst.BaseStatement] = []
    for line, name in zip(lines, names):
        layer = next((c for c in src.nodes(cst.Call, line) if src.code(c).strip() == name.strip()
                      and enclosing(src, c, cst.FunctionDef) is fn), None)
        if layer is None or _reads(layer) & local:
            return  # a layer sized by the call's values cannot be built once in __init__
        if not _same_in_init(src, f, init, _reads(layer) & locals_of(init)):
            return  # in __init__ a parameter of the same name would stand for another value
        kind = (dotted(layer.func) or "layer").rsplit(".", 1)[-1].lower()
        n = 1
        while f"{kind}{n}" in taken:
            n += 1
        attr = f"{kind}{n}"
        taken.add(attr)
        parent = src.parent.get(layer)
        if isinstance(parent, cst.Call) and parent.func is layer:
            swaps[layer] = parse_expr(f"self.{attr}")  # `nn.Linear(a, b)(x)` -> `self.linear1(x)`
        else:
            return  # assigned to a local, passed on, ...: not this edit
        added.append(cst.parse_statement(f"self.{attr} = {src.code(layer).strip()}"))
    if not added:
        return

    class Swap(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
            return swaps.get(original, updated)  # type: ignore[return-value]

    new_fn = fn.visit(Swap())
    new_init = init.with_changes(body=init.body.with_changes(body=[*init.body.body, *added]))
    new_cls = cls.with_changes(body=cls.body.with_changes(
        body=[new_fn if s is fn else new_init if s is init else s for s in cls.body.body]))
    yield ("inline-layers-to-init", src.start(init), src.replace(cls, new_cls),
           f"build the {len(added)} layer(s) of forward once in __init__")


def _same_in_init(src: Source, f: dict[str, Any], init: cst.FunctionDef, shadowed: set[str]) -> bool:
    """Names a layer reads in forward (globals) that __init__ binds too read the same value there:
    each is a parameter of __init__ that the model's construction (the finding's `model` place)
    passes the same-named variable."""
    if not shadowed:
        return True
    line = next((loc(r.get("location"))[1] for r in related(f, "model")), None)
    call = next((c for c in src.nodes(cst.Call, line)), None) if line else None
    if call is None:
        return False
    params = [p.name.value for p in init.params.params][1:]  # after self
    bound: dict[str, str | None] = {}
    for i, a in enumerate(call.args):
        if a.star:
            return False
        key = a.keyword.value if a.keyword is not None else (params[i] if i < len(params) else None)
        if key is not None:
            bound[key] = dotted(a.value)
    return all(bound.get(n) == n for n in shadowed)
