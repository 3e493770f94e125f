"""Cut a state carried from one iteration into the next (GG004, GG102): detach it at the start of
each iteration in the spelling its value needs (a tensor, an `(h, c)` tuple, a state that starts as
None), or, for neuron state held by a module (`self.mem`, `self.v`), call the module's own reset
method (or detach the attribute) on every such module of the trained model at the start of each
iteration. When the backward says `retain_graph=True` (the crash's suggested fix), the same patch
without it is tried first: once the history is cut nothing needs the old graph.

Every edit follows from the finding's data: the carried state's name (the subject, a `held-by`
entry naming it as the training loop holds it, or GG102's `cause`), the backward's line (the loop
around it is the iteration) and the syntax tree (what the name is assigned, which class writes
`self.attr`, which of its methods resets it).
"""
from __future__ import annotations

import re
from typing import Any, Iterator

import libcst as cst

from ..tree import Source, backward_calls, dotted, enclosing, loc, parse_stmt, related, subject_name
from .detach import detach_carried

__all__ = ["cut_carried_state", "cut_growing_state"]

Candidate = tuple[str, int, str, str]
ELEMENT = re.compile(r"(.+?)((?:\[-?\d+\])+)$")  # `hidden[0]`, `model.hidden[0]`


def cut_carried_state(src: Source, f: dict[str, Any], file: str) -> Iterator[Candidate]:
    """GG004: cut the carried state at the start of each iteration (then detach_carried's edits
    where it is written, as a fallback)."""
    name = subject_name(f)
    line = loc(f.get("location"))[1]
    if name and line:
        yield from _cuts(src, name, line, _held(f, file))
    for c in detach_carried(src, f, file):
        if c[0] != "detach-carried-state":  # its loop-start edit is the plain spelling of ours
            yield c


def cut_growing_state(src: Source, f: dict[str, Any], file: str) -> Iterator[Candidate]:
    """GG102: the retained backward re-walks an old graph because a state carries it (the `cause`):
    cut that state at the start of each iteration and drop retain_graph=True."""
    line = next((ln for ln in (loc(r.get("location"))[1] for r in related(f, "retained-by")) if ln),
                loc(f.get("location"))[1])
    if not line or not any(_retains(c) for c in backward_calls(src, line)):
        return
    names = [r.get("name") for r in related(f, "cause") if r.get("name")] or [subject_name(f)]
    held = _held(f, file)
    for name in dict.fromkeys(n for n in names if n):
        m = ELEMENT.match(name)
        base = m.group(1) if m else name
        if m:
            held.append(name)
        for family, at, text, note in _cuts(src, base, line, held):
            if family.endswith("-no-retain"):  # GG102's fix is the pair; the cut alone is GG004's
                yield family, at, text, note


# ---- where the iteration starts, what the state is ---------------------------------------------
def _held(f: dict[str, Any], file: str) -> list[str]:
    """Names the finding gives the state as the training loop holds it, in this file."""
    return [r["name"] for r in related(f, "held-by") if r.get("name") and loc(r.get("location"))[0] == file]


def _loop_around(src: Source, line: int) -> cst.For | cst.While | None:
    """The innermost loop whose body holds the statement at `line`."""
    stmt = src.statement(line)
    if stmt is None:
        return None
    child: cst.CSTNode = stmt
    for a in src.ancestors(stmt):
        if isinstance(a, (cst.For, cst.While)) and child is a.body:
            return a
        if isinstance(a, (cst.FunctionDef, cst.ClassDef)):
            return None
        child = a
    return None


def _flat(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _flat(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from _flat(target.value)
    else:
        yield target


def _writes(src: Source, name: str) -> list[tuple[cst.Assign, bool]]:
    """Assignments to `name` (dotted), each with whether it is the whole target (not unpacked)."""
    out = []
    for a in src.nodes(cst.Assign):
        for t in a.targets:
            if dotted(t.target) == name:
                out.append((a, True))
            elif any(dotted(x) == name for x in _flat(t.target)):
                out.append((a, False))
    return out


def _returns_tuple(src: Source, call: cst.BaseExpression) -> bool:
    """`call` is `f(...)` / `self.f(...)` of a function in this file whose every return is a tuple."""
    if not isinstance(call, cst.Call):
        return False
    fname = call.func.attr.value if isinstance(call.func, cst.Attribute) else dotted(call.func)
    for fn in src.nodes(cst.FunctionDef):
        if fn.name.value != fname:
            continue
        rets = [r for r in src.nodes(cst.Return) if enclosing(src, r, cst.FunctionDef) is fn]
        if rets and all(isinstance(r.value, cst.Tuple) for r in rets):
            return True
    return False


def _is_tuple(src: Source, name: str, held: list[str]) -> bool:
    """The state is a tuple of tensors (`(h, c)`): the finding names an element of it, it is
    assigned a tuple, or the program reads it by index."""
    if any((m := ELEMENT.match(h)) and m.group(1) == name for h in held):
        return True
    for a, whole in _writes(src, name):
        if whole and (isinstance(a.value, cst.Tuple) or _returns_tuple(src, a.value)):
            return True
    for s in src.nodes(cst.Subscript):
        if dotted(s.value) == name and len(s.slice) == 1 and isinstance(s.slice[0].slice, cst.Index) \
                and isinstance(s.slice[0].slice.value, (cst.Integer, cst.UnaryOperation)):
            return True
    return False


def _none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


def _may_be_none(src: Source, name: str) -> bool:
    return any(whole and _none(a.value) for a, whole in _writes(src, name))


def _detached(expr: str, tuple_: bool, none: bool) -> str:
    out = f"tuple(t.detach() for t in {expr})" if tuple_ else f"{expr}.detach()"
    return f"{out} if {expr} is not None else None" if none else out


def _free_name(src: Source) -> str:
    used = {n.value for n in src.nodes(cst.Name)}
    return next(n for n in ("m", "module", "layer", "mod", "_m", "_module") if n not in used)


def _retains(call: cst.Call) -> bool:
    return any(a.keyword is not None and a.keyword.value == "retain_graph"
               and isinstance(a.value, cst.Name) and a.value.value == "True" for a in call.args)


def _without_retain(call: cst.Call) -> cst.Call:
    args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == "retain_graph")]
    if args:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


# ---- the edits ---------------------------------------------------------------------------------
def _cuts(src: Source, name: str, line: int, held: list[str]) -> Iterator[Candidate]:
    """The cut of `name` at the start of the loop around the backward at `line`, each also without
    the backward's retain_graph=True when it has one (that variant first)."""
    loop = _loop_around(src, line)
    if loop is None or not isinstance(loop.body, cst.IndentedBlock) or not loop.body.body:
        return
    first = loop.body.body[0]
    retained = [c for c in backward_calls(src, line) if _retains(c)]
    for family, stmts, note in _statements(src, name, loop, held):
        new = [parse_stmt(s) for s in stmts]
        block = loop.body.with_changes(body=[*new, *loop.body.body])
        if retained:
            call = retained[0]

            class Edit(cst.CSTTransformer):
                def leave_Call(self, o: cst.Call, u: cst.Call) -> cst.BaseExpression:
                    return _without_retain(u) if o is call else u

                def leave_IndentedBlock(self, o: cst.IndentedBlock, u: cst.IndentedBlock) -> cst.IndentedBlock:
                    return u.with_changes(body=[*new, *u.body]) if o is loop.body else u

            text = src.module.visit(Edit()).code
            yield (f"{family}-no-retain", src.start(first), text, f"{note}; backward without retain_graph=True")
        yield family, src.start(first), src.replace(loop.body, block), note


def _statements(src: Source, name: str, loop: cst.For | cst.While,
                held: list[str]) -> Iterator[tuple[str, list[str], str]]:
    """(family, statements to put at the start of `loop`'s body, note)."""
    fn = enclosing(src, loop, cst.FunctionDef)
    if not name.startswith("self.") and re.fullmatch(r"\w+\.\w+", name) and not _writes(src, name):
        # `model.hidden`, written as `self.hidden` by the model's class: the loop's frame holds it
        held = [*held, name]
        name = "self." + name.split(".")[1]
    inside = [a for a, _ in _writes(src, name)
              if src.start(loop.body) <= src.start(a) <= src.end(loop.body) and enclosing(src, a, cst.FunctionDef) is fn]
    in_method = fn is not None and any(p.name.value == "self" for p in fn.params.params[:1])
    if inside and (in_method or not name.startswith("self.")):
        # a state the loop itself writes: `h = h.detach()` in the spelling its value needs
        stmt = f"{name} = {_detached(name, _is_tuple(src, name, held), _may_be_none(src, name))}"
        yield "detach-carried-state", [stmt], f"{stmt} at the start of each iteration"
        return
    if not name.startswith("self.") or in_method:
        return
    attr = name[len("self."):]
    if "." in attr or "[" in attr:
        return
    # the state as the loop's frame holds it (`model.hidden`): detach it there
    paths: dict[str, bool] = {}
    for h in held:
        m = ELEMENT.match(h)
        path = m.group(1) if m else h
        if re.fullmatch(rf"\w+(?:\.\w+)*\.{attr}", path) and not path.startswith("self."):
            paths[path] = paths.get(path, False) or bool(m)
    for path, element in paths.items():
        stmt = f"{path} = {_detached(path, element or _is_tuple(src, name, []), _may_be_none(src, name))}"
        yield "detach-carried-state", [stmt], f"{stmt} at the start of each iteration"
    # module-held state: every module of the trained model whose class writes self.<attr>
    classes = [c for c in src.nodes(cst.ClassDef)
               if any(enclosing(src, a, cst.ClassDef) is c for a, _ in _writes(src, name))]
    roots = _models(src, loop)
    if not classes or not roots:
        return
    var = _free_name(src)
    for cls in classes:
        reset = _reset_method(src, cls, name)
        for root in roots[:2]:
            head = [f"for {var} in {root}.modules():", f"    if isinstance({var}, {cls.name.value}):"]
            if reset:
                body = f"        {var}.{reset}()"
                yield ("reset-module-state", ["\n".join([*head, body]) + "\n"],
                       f"{cls.name.value}.{reset}() on every such module of {root} at the start of each iteration")
            else:
                state = f"{var}.{attr}"
                tuple_ = _is_tuple(src, name, [])
                if tuple_ or _tensor_at_init(src, cls, name):
                    value = _detached(state, tuple_, _may_be_none(src, name))
                else:  # a number or None until the first forward makes it a tensor
                    value = f"{state}.detach() if torch.is_tensor({state}) else {state}"
                yield ("detach-module-state", ["\n".join([*head, f"        {state} = {value}"]) + "\n"],
                       f"detach {cls.name.value}.{attr} on every such module of {root} at the start of each iteration")


def _models(src: Source, loop: cst.For | cst.While) -> list[str]:
    """Names the loop reads that hold a trained model: their `.parameters()` are read in this file
    or the loop calls them."""
    fn = enclosing(src, loop, cst.FunctionDef)
    scope = fn if fn is not None else src.module
    defined = {d.name.value for d in src.nodes((cst.FunctionDef, cst.ClassDef))}
    with_params = {dotted(c.func.value) for c in src.nodes(cst.Call)
                   if isinstance(c.func, cst.Attribute) and c.func.attr.value in ("parameters", "named_parameters",
                                                                                  "modules", "train")}
    # names bound to a constructed object (`net = Net()`) or a function's parameter (the model passed in)
    made = {dotted(t.target) for a in src.nodes(cst.Assign) if isinstance(a.value, cst.Call) for t in a.targets}
    made |= {p.name.value for p in fn.params.params} if fn is not None else set()
    called = {dotted(c.func) for c in src.nodes(cst.Call)
              if src.start(loop) <= src.start(c) <= src.end(loop)}
    out = []
    for n in src.nodes(cst.Name):
        if not (src.start(loop) <= src.start(n) <= src.end(loop)) or n.value in defined:
            continue
        parent = src.parent.get(n)
        if isinstance(parent, cst.Attribute) and parent.attr is n:
            continue
        if enclosing(src, n, cst.FunctionDef) is not fn and scope is not src.module:
            continue
        if n.value in with_params or n.value in called and n.value in made:
            out.append(n.value)
    return [n for n in dict.fromkeys(out) if n in with_params] or list(dict.fromkeys(out))[:1]


def _reset_method(src: Source, cls: cst.ClassDef, name: str) -> str | None:
    """A method of `cls` (not __init__/forward, no argument needed) that assigns `name` and nothing
    but plain statements: the class's own reset of its state."""
    for fn in cls.body.body:
        if not isinstance(fn, cst.FunctionDef) or fn.name.value in ("__init__", "forward"):
            continue
        params = fn.params.params
        if not params or params[0].name.value != "self" or any(p.default is None for p in params[1:]):
            continue
        writes = [a for a, whole in _writes(src, name) if whole and enclosing(src, a, cst.FunctionDef) is fn]
        if writes and not any(isinstance(s, (cst.For, cst.While, cst.If, cst.Try, cst.With))
                              for s in fn.body.body):
            if not any(isinstance(r.value, cst.BaseExpression) for r in src.nodes(cst.Return)
                       if enclosing(src, r, cst.FunctionDef) is fn and r.value is not None):
                return fn.name.value
    return None


def _tensor_at_init(src: Source, cls: cst.ClassDef, name: str) -> bool:
    """`cls.__init__` assigns `name` a call (torch.zeros(...), torch.full(...)): a tensor from the start."""
    init = next((fn for fn in cls.body.body if isinstance(fn, cst.FunctionDef) and fn.name.value == "__init__"), None)
    if init is None:
        return False
    writes = [a for a, whole in _writes(src, name) if whole and enclosing(src, a, cst.FunctionDef) is init]
    return bool(writes) and all(isinstance(a.value, cst.Call) for a in writes)
