"""Candidate source patches for one finding, written with LibCST (formatting and comments kept).

Every candidate is built from the finding's data only: its code, its subject's name and creation
line, its location and its related places (cut-by, modified-at, saved-at, fix-at), and the
source's syntax tree at those lines. A candidate is a whole new text of one file; verify.py turns
it into line edits, runs it and decides.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider


@dataclass(frozen=True)
class Candidate:
    code: str       # the finding's code
    family: str     # e.g. "detach-at-creation", "smooth-mask"
    file: str       # path relative to the program's root
    line: int       # the line the edit is about (in the original file)
    text: str       # the file's new text
    note: str       # one phrase: what the edit does


# ---- reading a finding ---------------------------------------------------------------------------
def _loc(d: Any) -> tuple[str | None, int | None]:
    if isinstance(d, dict):
        return d.get("file"), d.get("line")
    return None, None


def subject_name(f: dict[str, Any]) -> str | None:
    s = f.get("subject") or {}
    return s.get("name")


def related(f: dict[str, Any], *roles: str) -> list[dict[str, Any]]:
    return [r for r in f.get("related") or [] if r.get("role") in roles]


class Source:
    """One file's tree with positions, and lookups by line."""

    def __init__(self, text: str) -> None:
        self.wrapper = MetadataWrapper(cst.parse_module(text))
        self.module = self.wrapper.module
        self.pos = self.wrapper.resolve(PositionProvider)
        self.parent = self.wrapper.resolve(ParentNodeProvider)

    def start(self, node: cst.CSTNode) -> int:
        return self.pos[node].start.line

    def end(self, node: cst.CSTNode) -> int:
        return self.pos[node].end.line

    def nodes(self, kind: type | tuple[type, ...], line: int | None = None) -> list[Any]:
        out = [n for n in self.pos if isinstance(n, kind)]
        if line is not None:
            out = [n for n in out if self.start(n) <= line <= self.end(n)]
        return sorted(out, key=lambda n: (self.pos[n].start.line, self.pos[n].start.column))

    def statement(self, line: int) -> cst.SimpleStatementLine | None:
        """The simple statement line covering `line` (innermost)."""
        found = self.nodes(cst.SimpleStatementLine, line)
        return found[-1] if found else None

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        while node in self.parent:
            node = self.parent[node]
            yield node

    def replace(self, old: cst.CSTNode, new: cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel) -> str:
        return self.module.deep_replace(old, new).code  # type: ignore[arg-type]

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


def _expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def _stmt(text: str) -> cst.BaseStatement:
    return cst.parse_statement(text)


def _dotted(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _method_call(base: cst.BaseExpression, method: str) -> cst.Call:
    """`base.method()`, parenthesizing `base` when it is not an atom (a + b -> (a + b).method())."""
    atom = isinstance(base, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.Tuple,
                             cst.SimpleString, cst.Integer, cst.Float)) or bool(getattr(base, "lpar", ()))
    if not atom:
        base = base.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=base, attr=cst.Name(method)))


def _insert_before(src: Source, stmt: cst.CSTNode, new: str) -> str:
    return src.replace(stmt, cst.FlattenSentinel([_stmt(new), stmt]))


def _wrap_no_grad(src: Source, stmt: cst.BaseStatement) -> str:
    block = cst.IndentedBlock(body=[stmt.with_changes(leading_lines=[])])
    with_ = cst.With(items=[cst.WithItem(_expr("torch.no_grad()"))], body=block,
                     leading_lines=getattr(stmt, "leading_lines", ()))
    return src.replace(stmt, with_)


# ---- the families --------------------------------------------------------------------------------
Maker = Callable[[Source, dict[str, Any], str], Iterator[tuple[str, int, str, str]]]


def _assign_of(src: Source, name: str, line: int | None) -> tuple[cst.SimpleStatementLine, cst.Assign] | None:
    if line is None:
        return None
    stmt = src.statement(line)
    if stmt is None:
        return None
    for small in stmt.body:
        if isinstance(small, cst.Assign) and any(_dotted(t.target) == name for t in small.targets):
            return stmt, small
    return None


def detach_source(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG001/GG002 (and GG004): detach the tensor where it is made, or where it is used, or build
    it under torch.no_grad()."""
    name = subject_name(f)
    if not name:
        return
    created = (f.get("subject") or {}).get("created_at")
    lines = [_loc(r.get("location"))[1] for r in related(f, "fix-at")] + [_loc(created)[1]]
    for line in [ln for ln in lines if ln]:
        hit = _assign_of(src, name, line)
        if hit:
            stmt, assign = hit
            new = assign.with_changes(value=_method_call(assign.value, "detach"))
            yield ("detach-at-creation", line, src.replace(assign, new), f"{name} = (...).detach()")
            if not any(isinstance(a, cst.With) for a in src.ancestors(stmt)):
                yield ("no-grad-at-creation", line, _wrap_no_grad(src, stmt),
                       f"build {name} under torch.no_grad()")
            break
    use = _loc(f.get("location"))[1]
    stmt = src.statement(use) if use else None
    if stmt is not None:
        names = [n for n in src.nodes((cst.Name, cst.Attribute), use)
                 if _dotted(n) == name and src.statement(src.start(n)) is stmt
                 and not isinstance(src.parent.get(n), cst.Attribute)]
        targets = {id(t.target) for s in stmt.body if isinstance(s, cst.Assign) for t in s.targets}
        names = [n for n in names if id(n) not in targets]
        if names:
            n = names[-1]
            yield ("detach-at-use", use, src.replace(n, _method_call(n, "detach")), f"use {name}.detach() here")


def detach_carried(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG004: detach the carried state at the start of the iteration."""
    name = subject_name(f)
    line = _loc(f.get("location"))[1]
    if not name or not line:
        return
    stmt = src.statement(line)
    loops = [a for a in src.ancestors(stmt)] if stmt is not None else []
    loop = next((a for a in loops if isinstance(a, (cst.For, cst.While))), None)
    # `self.h` is only a name inside a method: a module-level loop cannot detach it
    in_method = loop is not None and _enclosing(src, loop, cst.FunctionDef) is not None
    if loop is not None and isinstance(loop.body, cst.IndentedBlock) and loop.body.body \
            and (in_method or not name.startswith("self.")):
        first = loop.body.body[0]
        yield ("detach-carried-state", src.start(first), _insert_before(src, first, f"{name} = {name}.detach()"),
               f"{name} = {name}.detach() at the start of each iteration")
    # or detach where the state is written back (inside forward, a method, ...)
    for a in src.nodes(cst.Assign):
        if any(_dotted(t.target) == name for t in a.targets) and isinstance(a.value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            if src.start(a) != (_loc((f.get("subject") or {}).get("created_at"))[1] or -1) or loop is None:
                yield ("detach-on-write", src.start(a), src.replace(a, a.with_changes(value=_method_call(a.value, "detach"))),
                       f"store {name} detached")


def accumulate_detached(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG101: accumulate a number (.item()) or a detached tensor instead of the graph."""
    name = subject_name(f)
    lines = {_loc(f.get("location"))[1], _loc((f.get("subject") or {}).get("created_at"))[1]}
    lines |= {_loc(r.get("location"))[1] for r in related(f, "fix-at", "held-by")}
    base = (name or "").split("[")[0]
    seen: set[int] = set()
    for line in sorted(ln for ln in lines if ln):
        stmt = src.statement(line)
        if stmt is None or id(stmt) in seen:
            continue
        seen.add(id(stmt))
        for small in stmt.body:
            value = None
            if isinstance(small, cst.AugAssign):
                value = small.value
            elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                    and isinstance(small.value.func, cst.Attribute) \
                    and small.value.func.attr.value in ("append", "extend", "add") and small.value.args:
                value = small.value.args[0].value
            elif isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Subscript):
                value = small.value
            elif isinstance(small, cst.Assign) and isinstance(small.value, cst.BinaryOperation) \
                    and base and _dotted(small.value.left) == _dotted(small.targets[0].target):
                value = small.value.right
            if value is None:
                continue
            for method in ("item", "detach"):
                yield (f"accumulate-{method}", line, src.replace(value, _method_call(value, method)),
                       f"keep (...).{method}() instead of the graph")


_INPLACE_METHODS = {"add_", "sub_", "mul_", "div_", "clamp_", "relu_", "sigmoid_", "tanh_", "exp_",
                    "masked_fill_", "pow_", "abs_", "neg_", "sqrt_", "fill_", "zero_", "copy_", "clamp_min_",
                    "clamp_max_", "addcmul_", "addcdiv_", "softmax_", "log_", "floor_", "round_", "t_"}
_AUG_OPS = {cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
            cst.DivideAssign: cst.Divide, cst.PowerAssign: cst.Power, cst.MatrixMultiplyAssign: cst.MatrixMultiply}


def out_of_place(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG005: write the in-place op out of place, or drop `inplace=True`."""
    lines = [_loc(r.get("location"))[1] for r in related(f, "modified-at", "fix-at")]
    lines.append(_loc(f.get("location"))[1])
    for line in [ln for ln in dict.fromkeys(lines) if ln]:
        stmt = src.statement(line)
        if stmt is None:
            continue
        for small in stmt.body:
            if isinstance(small, cst.AugAssign) and type(small.operator) in _AUG_OPS:
                op = _AUG_OPS[type(small.operator)]()
                new = cst.Assign(targets=[cst.AssignTarget(small.target)],
                                 value=cst.BinaryOperation(left=small.target, operator=op, right=small.value))
                yield ("out-of-place", line, src.replace(small, new), "x = x op y instead of x op= y")
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                    and isinstance(small.value.func, cst.Attribute) \
                    and small.value.func.attr.value in _INPLACE_METHODS:
                call = small.value
                target = call.func.value  # type: ignore[attr-defined]
                if isinstance(target, (cst.Name, cst.Attribute)):
                    new_call = call.with_changes(func=call.func.with_changes(attr=cst.Name(call.func.attr.value[:-1])))  # type: ignore[attr-defined]
                    new = cst.Assign(targets=[cst.AssignTarget(target)], value=new_call)
                    yield ("out-of-place", line, src.replace(small, new), "x = x.op(...) instead of x.op_(...)")
        for call in src.nodes(cst.Call, line):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in _INPLACE_METHODS \
                    and src.statement(src.start(call)) is stmt \
                    and not (isinstance(stmt.body[0], cst.Expr) and stmt.body[0].value is call):
                new = call.with_changes(func=call.func.with_changes(attr=cst.Name(call.func.attr.value[:-1])))
                yield ("out-of-place", line, src.replace(call, new), f"{call.func.attr.value[:-1]}() instead of {call.func.attr.value}()")
    # inplace=True anywhere (constructor or functional call), nearest to the finding first
    anchor = next((ln for ln in lines if ln), 0)
    flagged = []
    for call in src.nodes(cst.Call):
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "inplace" and isinstance(arg.value, cst.Name) \
                    and arg.value.value == "True":
                flagged.append((abs(src.start(call) - anchor), call, arg))
    for _, call, arg in sorted(flagged, key=lambda t: t[0]):
        args = [a for a in call.args if a is not arg]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        yield ("drop-inplace", src.start(call), src.replace(call, call.with_changes(args=args)), "drop inplace=True")


def no_grad_update(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG006: run the manual update under torch.no_grad()."""
    line = _loc(f.get("location"))[1]
    stmt = src.statement(line) if line else None
    if stmt is None:
        return
    # the whole enclosing `for p in params:` loop when the update is its body, else the statement
    parent = src.parent.get(stmt)
    loop = src.parent.get(parent) if isinstance(parent, cst.IndentedBlock) else None
    yield ("no-grad-update", line, _wrap_no_grad(src, stmt), "wrap the update in torch.no_grad()")
    if isinstance(loop, cst.For):
        yield ("no-grad-update", src.start(loop), _wrap_no_grad(src, loop), "wrap the update loop in torch.no_grad()")


def zero_grad_before_backward(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG010: call optimizer.zero_grad() before the backward that precedes the step."""
    line = _loc(f.get("location"))[1]
    stmt = src.statement(line) if line else None
    if stmt is None:
        return
    step = next((c for c in src.nodes(cst.Call, line) if isinstance(c.func, cst.Attribute)
                 and c.func.attr.value == "step"), None)
    opt = _dotted(step.func.value) if step is not None else subject_name(f)  # type: ignore[union-attr]
    if not opt:
        return
    block = src.parent.get(stmt)
    body = list(getattr(block, "body", []))
    before = body[:body.index(stmt)] if stmt in body else []
    # the backward: a statement in this block (or a compound one holding it) before the step
    for s in reversed(before):
        text = src.code(s)
        if ".backward(" in text or "autograd.backward(" in text:
            yield ("zero-grad-before-backward", src.start(s), _insert_before(src, s, f"{opt}.zero_grad()"),
                   f"{opt}.zero_grad() before the backward")
            break
    loop = next((a for a in src.ancestors(stmt) if isinstance(a, (cst.For, cst.While))), None)
    if loop is not None and isinstance(loop.body, cst.IndentedBlock):
        first = loop.body.body[0]
        yield ("zero-grad-at-iteration-start", src.start(first), _insert_before(src, first, f"{opt}.zero_grad()"),
               f"{opt}.zero_grad() at the start of each iteration")


# smooth surrogates: comparisons become sigmoids, & becomes *, where(c, 1, 0) becomes c
_SHARPNESS = ("5.0", "20.0")


def _is_const(node: cst.BaseExpression, value: float) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return float(node.value) == value
        except ValueError:
            return False
    if isinstance(node, cst.Call) and _dotted(node.func) in ("torch.tensor", "torch.as_tensor") and node.args:
        return _is_const(node.args[0].value, value)
    return False


class _Soften(cst.CSTTransformer):
    def __init__(self, k: str) -> None:
        self.k = k
        self.changed = False

    def leave_Comparison(self, original: cst.Comparison, updated: cst.Comparison) -> cst.BaseExpression:
        if len(updated.comparisons) != 1:
            return updated
        comp = updated.comparisons[0]
        left, right = updated.left.with_changes(lpar=[], rpar=[]), comp.comparator
        if isinstance(comp.operator, (cst.GreaterThan, cst.GreaterThanEqual)):
            hi, lo = left, right
        elif isinstance(comp.operator, (cst.LessThan, cst.LessThanEqual)):
            hi, lo = right, left
        else:
            return updated
        self.changed = True
        diff = cst.BinaryOperation(left=hi, operator=cst.Subtract(), right=lo,
                                   lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        prod = cst.BinaryOperation(left=_expr(self.k), operator=cst.Multiply(), right=diff)
        return cst.Call(func=_expr("torch.sigmoid"), args=[cst.Arg(prod)])

    def leave_BinaryOperation(self, original: cst.BinaryOperation, updated: cst.BinaryOperation) -> cst.BaseExpression:
        if isinstance(updated.operator, cst.BitAnd) and self.changed:
            return updated.with_changes(operator=cst.Multiply())
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        name = _dotted(updated.func) or ""
        if name.endswith("where") and len(updated.args) == 3 and self.changed \
                and _is_const(updated.args[1].value, 1.0) and _is_const(updated.args[2].value, 0.0):
            return updated.args[0].value.with_changes(lpar=[], rpar=[]) \
                if isinstance(updated.args[0].value, cst.Call) else updated.args[0].value
        if isinstance(updated.func, cst.Attribute) and updated.func.attr.value in ("float", "double", "half") \
                and not updated.args and self.changed and isinstance(updated.func.value, cst.Call) \
                and _dotted(updated.func.value.func) == "torch.sigmoid":
            return updated.func.value.with_changes(lpar=[], rpar=[])
        return updated


def _paren(code: str) -> str:
    """`code` as an operand: parenthesized unless it is a name, attribute, call or subscript."""
    node = _expr(code)
    return code if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) else f"({code})"


def smooth_cut(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG008/GG009: a smooth surrogate for a hard comparison mask, a straight-through estimator for
    round, the tensor itself instead of its .item()/.detach() copy."""
    cuts = related(f, "cut-by", "fix-at")
    done: set[int] = set()
    for r in cuts:
        line = _loc(r.get("location"))[1]
        stmt = src.statement(line) if line else None
        if stmt is None or id(stmt) in done:
            continue
        done.add(id(stmt))
        text = src.code(stmt)
        if any(isinstance(n, cst.Comparison) for n in src.nodes(cst.Comparison, line)):
            for k in _SHARPNESS:
                t = _Soften(k)
                new = stmt.visit(t)
                if t.changed:
                    yield ("smooth-mask", line, src.replace(stmt, new), f"sigmoid({k} * (x - t)) for each comparison")
        for call in src.nodes(cst.Call, line):
            fname = _dotted(call.func) or ""
            attr = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            if fname in ("torch.round", "torch.floor", "torch.ceil", "torch.sign") and call.args:
                x = src.code(call.args[0].value)
                yield ("straight-through", line, src.replace(call, _expr(f"({x} + ({fname}({x}) - {_paren(x)}).detach())")),
                       f"straight-through estimator for {fname}")
            elif attr in ("round", "floor", "ceil", "sign") and not call.args:
                x = src.code(call.func.value)  # type: ignore[attr-defined]
                yield ("straight-through", line, src.replace(call, _expr(f"({x} + ({_paren(x)}.{attr}() - {_paren(x)}).detach())")),
                       f"straight-through estimator for .{attr}()")
            elif attr in ("item", "detach") and not call.args:
                yield (f"keep-tensor", line, src.replace(call, call.func.value.with_changes()),  # type: ignore[attr-defined]
                       f"keep the tensor instead of .{attr}()")
        del text


def detach_copy_sources(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG104: torch.tensor(...) copies of tensors that require grad: copy their detached values."""
    # the subject is the copy when it is assigned; the sources copied are the `source` entries
    sources = [r.get("name") for r in related(f, "source") if r.get("name")]
    names = sources or [subject_name(f)]
    name = names[0]
    line = _loc(f.get("location"))[1]
    if not name or not line:
        return
    refs = [n for n in src.nodes((cst.Name, cst.Attribute), line) if _dotted(n) in names
            and not isinstance(src.parent.get(n), cst.Attribute)]
    if not refs:
        return

    class Det(cst.CSTTransformer):
        def leave_Name(self, o: cst.Name, u: cst.Name) -> Any:
            return _method_call(u, "detach") if any(o is r for r in refs) else u

        def leave_Attribute(self, o: cst.Attribute, u: cst.Attribute) -> Any:
            return _method_call(u, "detach") if any(o is r for r in refs) else u

    stmt = src.statement(line)
    if stmt is not None:
        yield ("detach-copy-source", line, src.replace(stmt, stmt.visit(Det())), f"copy {name}.detach()")


def register_parameter(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG011: make an attribute tensor an nn.Parameter, so model.parameters() holds it."""
    name = subject_name(f) or ""
    line = _loc((f.get("subject") or {}).get("created_at"))[1]
    attr = name.rsplit(".", 1)[-1]
    for a in src.nodes(cst.Assign, line) if line else []:
        for t in a.targets:
            d = _dotted(t.target) or ""
            if d.startswith("self.") and d.rsplit(".", 1)[-1] == attr:
                yield ("register-parameter", line, src.replace(a.value, cst.Call(func=_expr("torch.nn.Parameter"), args=[cst.Arg(a.value)])),
                       f"make {d} an nn.Parameter")


# ---- more families -------------------------------------------------------------------------------
def _backward_calls(src: Source, line: int) -> list[cst.Call]:
    """`x.backward(...)`, `torch.autograd.backward(...)`, `autograd.grad(...)` calls on `line`."""
    out = []
    for call in src.nodes(cst.Call, line):
        name = _dotted(call.func) or ""
        attr = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
        if attr == "backward" or name.endswith("autograd.backward") or name.endswith("autograd.grad"):
            if src.start(call) == line or src.statement(src.start(call)) is src.statement(line):
                out.append(call)
    return out


def _with_kwarg(call: cst.Call, key: str, value: str) -> cst.Call:
    args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == key)]
    if args:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    new = cst.Arg(value=_expr(value), keyword=cst.Name(key),
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    return call.with_changes(args=[*args, new])


def _refs(src: Source, name: str, line: int) -> list[cst.CSTNode]:
    """Reads of `name` (a dotted name) on `line`'s statement, assignment targets left out."""
    stmt = src.statement(line)
    if stmt is None:
        return []
    targets = {id(t.target) for s in stmt.body if isinstance(s, cst.Assign) for t in s.targets}
    return [n for n in src.nodes((cst.Name, cst.Attribute), line)
            if _dotted(n) == name and src.statement(src.start(n)) is stmt
            and not _is_attr_tail(src, n) and id(n) not in targets]


def _is_attr_tail(src: Source, n: cst.CSTNode) -> bool:
    """`n` is the `x` of `obj.x` (another object's attribute), or `n` in `n.shape` / `n.fc.weight`
    (a part of it read): only `n` itself or `n.method(...)` reads the tensor `n`."""
    parent = src.parent.get(n)
    if not isinstance(parent, cst.Attribute):
        return False
    call = src.parent.get(parent)
    return parent.attr is n or not (isinstance(call, cst.Call) and call.func is parent)


def _block_between(src: Source, first: int, last: int) -> list[cst.SimpleStatementLine]:
    """Simple statements starting in [first, last], in order."""
    return [s for s in src.nodes(cst.SimpleStatementLine) if first <= src.start(s) <= last]


def reuse_graph(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG003: the second backward goes through a graph the first one freed. Detach the shared tensor
    where the first loss reads it (the usual GAN fix), or where the second one does; sum the two losses
    into one backward; or keep the graph with retain_graph=True on the first backward."""
    name = subject_name(f)
    second = _loc(f.get("location"))[1]
    firsts = [ln for ln in (_loc(r.get("location"))[1] for r in related(f, "consumed-by")) if ln]
    created = _loc((f.get("subject") or {}).get("created_at"))[1]
    for first in firsts:
        # the shared tensor read between its creation and the first backward, or after the first
        # backward up to the second: one `.detach()` on one read
        if name and second:
            spans = [(created + 1 if created else first, first), (first + 1, second)]
            for lo, hi in spans:
                if lo > hi:
                    continue
                for stmt in _block_between(src, lo, hi):
                    for n in _refs(src, name, src.start(stmt)):
                        yield ("detach-shared-input", src.start(n), src.replace(n, _method_call(n, "detach")),
                               f"read {name}.detach() here")
        calls = _backward_calls(src, first)
        for call in calls:
            yield ("retain-graph", first, src.replace(call, _with_kwarg(call, "retain_graph", "True")),
                   "retain_graph=True on the first backward")
        # `a.backward()` then `b.backward()` in one block: `(a + b).backward()`
        s1, s2 = src.statement(first), src.statement(second) if second else None
        if s1 is not None and s2 is not None and s1 is not s2 and src.parent.get(s1) is src.parent.get(s2):
            c1, c2 = _backward_calls(src, first), _backward_calls(src, second)
            plain = all(len(c) == 1 and isinstance(c[0].func, cst.Attribute) and not c[0].args
                        and c[0].func.attr.value == "backward" and len(s.body) == 1
                        and isinstance(s.body[0], cst.Expr) and s.body[0].value is c[0]
                        for c, s in ((c1, s1), (c2, s2)))
            if plain:
                a = src.code(c1[0].func.value)  # type: ignore[attr-defined]
                b = src.code(c2[0].func.value)  # type: ignore[attr-defined]
                block = src.parent[s1]
                body = list(block.body)  # type: ignore[attr-defined]
                if body.index(s2) == body.index(s1) + 1:  # adjacent: nothing runs between them
                    summed = s1.with_changes(body=[cst.Expr(_expr(f"({a} + {b}).backward()"))])
                    body = [summed if s is s1 else s for s in body if s is not s2]
                    yield ("sum-losses", first, src.replace(block, block.with_changes(body=body)),
                           f"one backward of {a} + {b}")


def _leaf_value(small: cst.CSTNode) -> list[cst.BaseExpression]:
    """The expressions a statement makes tensors with: an assignment's value, an append's argument,
    a list's elements or a comprehension's element."""
    vals: list[cst.BaseExpression] = []
    if isinstance(small, cst.Assign):
        vals.append(small.value)
    elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and small.value.args \
            and isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value in ("append", "insert"):
        vals.append(small.value.args[-1].value)
    out: list[cst.BaseExpression] = []
    for v in vals:
        if isinstance(v, (cst.ListComp, cst.GeneratorExp)):
            out.append(v.elt)  # type: ignore[arg-type]
        elif isinstance(v, (cst.List, cst.Tuple)):
            out.extend(e.value for e in v.elements)
        else:
            out.append(v)
    return out


class _DropRequiresGrad(cst.CSTTransformer):
    def __init__(self) -> None:
        self.dropped = False

    def leave_Call(self, o: cst.Call, u: cst.Call) -> cst.Call:
        keep = [a for a in u.args if not (a.keyword is not None and a.keyword.value == "requires_grad"
                                          and isinstance(a.value, cst.Name) and a.value.value == "True")]
        if len(keep) != len(u.args):
            self.dropped = True
            if keep:
                keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return u.with_changes(args=keep)
        return u


def leaf_parameter(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG007: the tensor handed to the optimizer is the result of an op (a cast, a scale) on the leaf.
    Create it first and ask for gradients last (`torch.randn(2).double().requires_grad_()`), or make
    the result a new leaf (`.detach().requires_grad_()`, `nn.Parameter(...)`)."""
    lines = [_loc(r.get("location"))[1] for r in related(f, "made-non-leaf", "fix-at")]
    lines.append(_loc((f.get("subject") or {}).get("created_at"))[1])
    for line in [ln for ln in dict.fromkeys(lines) if ln]:
        stmt = src.statement(line)
        if stmt is None:
            continue
        for small in stmt.body:
            for v in _leaf_value(small):
                if isinstance(v, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)):
                    continue
                t = _DropRequiresGrad()
                moved = v.visit(t)
                if t.dropped and src.code(v).rstrip().endswith(")"):
                    yield ("requires-grad-last", line, src.replace(v, _method_call(moved, "requires_grad_")),  # type: ignore[arg-type]
                           "create the tensor first, then .requires_grad_()")
                yield ("new-leaf", line, src.replace(v, _method_call(_method_call(v, "detach"), "requires_grad_")),
                       "(...).detach().requires_grad_(): a leaf again")
                yield ("wrap-parameter", line, src.replace(v, cst.Call(func=_expr("torch.nn.Parameter"), args=[cst.Arg(v)])),
                       "nn.Parameter(...) after the op")
        break


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
    line = _loc(f.get("location"))[1]
    for call in _backward_calls(src, line) if line else []:
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward" and not call.args:
            base = call.func.value
            yield ("mean-at-backward", line, src.replace(base, _method_call(base, "mean")),
                   f"{src.code(base)}.mean().backward()")
    created = _loc((f.get("subject") or {}).get("created_at"))[1]
    hit = _assign_of(src, name, created) if name and created else None
    if hit:
        _, assign = hit
        yield ("mean-at-creation", created, src.replace(assign.value, _method_call(assign.value, "mean")),
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


def _self_attr_assigns(src: Source, attr: str) -> list[cst.Assign]:
    return [a for a in src.nodes(cst.Assign)
            if any((_dotted(t.target) or "") == f"self.{attr}" for t in a.targets)]


def _enclosing(src: Source, node: cst.CSTNode, kind: type) -> Any:
    return next((a for a in src.ancestors(node) if isinstance(a, kind)), None)


class _Names(cst.CSTVisitor):
    """Bare names read in an expression (attribute tails left out)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False


def _locals_of(fn: cst.FunctionDef) -> set[str]:
    out = {p.name.value for p in [*fn.params.params, *fn.params.posonly_params, *fn.params.kwonly_params]}
    for star in (fn.params.star_arg, fn.params.star_kwarg):
        if isinstance(star, cst.Param):
            out.add(star.name.value)

    class Targets(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Name):
                out.add(node.target.value)

        def visit_For(self, node: cst.For) -> None:
            if isinstance(node.target, cst.Name):
                out.add(node.target.value)

    fn.body.visit(Targets())
    return out - {"self"}


def register_container(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG011: modules or tensors kept in a plain list/dict attribute are invisible to
    model.parameters(): hold them in nn.ModuleList / nn.ParameterList / nn.ModuleDict."""
    name = subject_name(f) or ""
    attr = name.split("[")[0].rsplit(".", 1)[-1]
    line = _loc((f.get("subject") or {}).get("created_at"))[1]
    for a in _self_attr_assigns(src, attr):
        if line and not src.start(a) <= line <= src.end(a):
            continue
        v = a.value
        if isinstance(v, (cst.List, cst.ListComp, cst.Tuple)):
            for kind in ("ModuleList", "ParameterList"):
                yield (f"{kind.lower()}", src.start(a), src.replace(v, cst.Call(func=_expr(f"torch.nn.{kind}"), args=[cst.Arg(v)])),
                       f"self.{attr} = nn.{kind}([...])")
        elif isinstance(v, (cst.Dict, cst.DictComp)):
            for kind in ("ModuleDict", "ParameterDict"):
                yield (f"{kind.lower()}", src.start(a), src.replace(v, cst.Call(func=_expr(f"torch.nn.{kind}"), args=[cst.Arg(v)])),
                       f"self.{attr} = nn.{kind}({{...}})")


def layer_to_init(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG011: a layer built in forward (or another method) is new at every call and never reaches the
    optimizer made from model.parameters(): build it once at the end of __init__, when its arguments
    do not depend on the call's local values."""
    name = subject_name(f) or ""
    attr = name.split("[")[0].rsplit(".", 1)[-1]
    if not attr:
        return
    for a in _self_attr_assigns(src, attr):
        fn = _enclosing(src, a, cst.FunctionDef)
        cls = _enclosing(src, fn, cst.ClassDef) if fn is not None else None
        if fn is None or cls is None or fn.name.value == "__init__":
            continue
        init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        stmt = src.parent.get(a)
        if init is None or not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 \
                or src.parent.get(stmt) is not fn.body:
            continue
        seen = _Names()
        a.value.visit(seen)
        if seen.names & _locals_of(fn) or not isinstance(a.value, cst.Call):
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
    if not name or "[" in name:
        return
    owner = name.rsplit(".", 1)[0] if "." in name else ""
    anchor = _loc(f.get("location"))[1] or 0
    opts = [c for c in src.nodes(cst.Call) if re.fullmatch(r"(torch\.)?optim\.[A-Z]\w*", _dotted(c.func) or "")
            and c.args and c.args[0].keyword is None]
    for call in sorted(opts, key=lambda c: abs(src.start(c) - anchor))[:2]:
        first = call.args[0].value
        if isinstance(first, (cst.List, cst.Dict)) and any(isinstance(e, cst.DictElement) for e in getattr(first, "elements", [])):
            continue  # parameter groups: which group is the user's call
        spread = src.code(first) if isinstance(first, cst.List) else f"*{src.code(first)}"
        if isinstance(first, cst.List):
            spread = spread.strip()[1:-1].rstrip().rstrip(",")
        for extra in ([f"*{name}.parameters()", name] if not owner else [name, f"*{owner}.parameters()"]):
            if extra.lstrip("*") in spread:
                continue
            new = call.with_changes(args=[call.args[0].with_changes(value=_expr(f"[{spread}, {extra}]")), *call.args[1:]])
            yield ("add-to-optimizer", src.start(call), src.replace(call, new), f"optimize {extra.lstrip('*')} too")


# ---- gradients switched off, then the loss re-wrapped ------------------------------------------------
_NO_GRAD = ("torch.no_grad", "no_grad", "torch.inference_mode", "inference_mode")


def _grad_off(call: cst.BaseExpression) -> bool:
    """`torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(False)`."""
    if not isinstance(call, cst.Call):
        return False
    name = _dotted(call.func) or ""
    if name in _NO_GRAD:
        return True
    return name.endswith("set_grad_enabled") and len(call.args) == 1 \
        and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "False"


def _is_rewrap(src: Source, small: cst.CSTNode, name: str) -> bool:
    """`name.requires_grad = True`, `name.requires_grad_()`, `name = Variable(name, requires_grad=True)`
    or `name = torch.tensor(name, requires_grad=True)`: a loss made a new leaf so backward runs."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        t = small.targets[0].target
        if isinstance(t, cst.Attribute) and t.attr.value == "requires_grad" and src.code(t.value).strip() == name:
            return isinstance(small.value, cst.Name) and small.value.value == "True"
        v = small.value
        if src.code(t).strip() == name and isinstance(v, cst.Call) and v.args \
                and (_dotted(v.func) or "").split(".")[-1] in ("Variable", "tensor", "as_tensor") \
                and src.code(v.args[0].value).strip() == name:
            return any(a.keyword is not None and a.keyword.value == "requires_grad" for a in v.args)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
            and isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value == "requires_grad_":
        return src.code(small.value.func.value).strip() == name
    return False


def _drop_rewraps(text: str, name: str) -> str:
    src = Source(text)
    hits = [s for s in src.nodes(cst.SimpleStatementLine) if len(s.body) == 1 and _is_rewrap(src, s.body[0], name)]

    class Drop(cst.CSTTransformer):
        def leave_SimpleStatementLine(self, o: cst.SimpleStatementLine, u: cst.SimpleStatementLine) -> Any:
            return cst.RemoveFromParent() if any(o is h for h in hits) else u

        def leave_IndentedBlock(self, o: cst.IndentedBlock, u: cst.IndentedBlock) -> cst.IndentedBlock:
            return u if u.body else u.with_changes(body=[_stmt("pass")])

    return src.module.visit(Drop()).code if hits else text


def enable_grad(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG009 (and GG008): the loss was computed with gradients off. Run that code with gradients on:
    unwrap the `with torch.no_grad():` block, drop `torch.set_grad_enabled(False)` or a `@torch.no_grad()`
    decorator, nearest to the cut first; the `requires_grad = True` re-wrap that let backward run on a
    loss without history goes too (it would now fail on a non-leaf)."""
    anchors = [ln for ln in [_loc(r.get("location"))[1] for r in related(f, "cut-by", "fix-at")]
               + [_loc(f.get("location"))[1]] if ln]
    if not anchors:
        return
    found: list[tuple[int, cst.CSTNode, str]] = []
    for w in src.nodes(cst.With):
        if len(w.items) == 1 and _grad_off(w.items[0].item):
            found.append((src.start(w), w, "unwrap"))
    for s in src.nodes(cst.SimpleStatementLine):
        if len(s.body) == 1 and isinstance(s.body[0], cst.Expr) and _grad_off(s.body[0].value) \
                and (_dotted(s.body[0].value.func) or "").endswith("set_grad_enabled"):  # type: ignore[attr-defined]
            found.append((src.start(s), s, "drop"))
    for fn in src.nodes(cst.FunctionDef):
        for d in fn.decorators:
            if _grad_off(d.decorator):
                found.append((src.start(fn), d, "drop"))

    def dist(line: int) -> int:
        return min(abs(line - a) for a in anchors)

    name = subject_name(f)
    for line, node, how in sorted(found, key=lambda t: dist(t[0]))[:3]:
        if how == "unwrap":
            body = list(node.body.body)  # type: ignore[attr-defined]
            body[0] = body[0].with_changes(leading_lines=node.leading_lines)  # type: ignore[attr-defined]
            new = src.replace(node, cst.FlattenSentinel(body))
        else:
            new = src.replace(node, cst.RemoveFromParent())
        yield ("enable-grad", line, new, "compute it with gradients on")
        if name:
            dropped = _drop_rewraps(new, name)
            if dropped != new:
                yield ("enable-grad", line, dropped, f"compute it with gradients on; no {name} re-wrap")


def _upstream(src: Source, lines: list[int], hops: int = 2) -> list[int]:
    """`lines` and the lines that assigned the names read there, `hops` assignments back (the
    latest assignment before the use, in the same function)."""
    out = list(dict.fromkeys(lines))
    frontier = list(out)
    assigns = src.nodes(cst.Assign)
    for _ in range(hops):
        nxt = []
        for line in frontier:
            stmt = src.statement(line)
            if stmt is None:
                continue
            seen = _Names()
            for small in stmt.body:
                (small.value if isinstance(small, (cst.Assign, cst.AugAssign)) else small).visit(seen)  # type: ignore[union-attr]
            fn = _enclosing(src, stmt, cst.FunctionDef)
            for name in seen.names:
                before = [a for a in assigns if src.start(a) < src.start(stmt) and _enclosing(src, a, cst.FunctionDef) is fn
                          and any(_dotted(t.target) == name for t in a.targets)]
                if before and src.start(before[-1]) not in out:
                    out.append(src.start(before[-1]))
                    nxt.append(src.start(before[-1]))
        frontier = nxt
    return out


def keep_history(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG009/GG008: `.data`, `.detach()` or `.item()` where the loss's inputs are made reads the
    values without their history: read the tensor itself (and drop a re-wrap of the loss)."""
    lines = [ln for ln in [_loc(r.get("location"))[1] for r in related(f, "cut-by", "fix-at")]
             + [_loc((f.get("subject") or {}).get("created_at"))[1]] if ln]
    for line in _upstream(src, lines):
        for a in src.nodes(cst.Attribute, line):
            if a.attr.value == "data" and src.statement(src.start(a)) is src.statement(line) \
                    and not isinstance(src.parent.get(a), cst.Attribute):
                yield ("keep-history", line, src.replace(a, a.value), "the tensor instead of its .data")
        for c in src.nodes(cst.Call, line):
            if isinstance(c.func, cst.Attribute) and c.func.attr.value in ("detach", "item") and not c.args \
                    and src.statement(src.start(c)) is src.statement(line):
                yield ("keep-history", line, src.replace(c, c.func.value), f"the tensor instead of its .{c.func.attr.value}()")
        # a copy into a new tensor (`torch.tensor(x)`, `Variable(x, requires_grad=True)`): x itself
        for c in src.nodes(cst.Call, line):
            if (_dotted(c.func) or "").split(".")[-1] in _COPIES and c.args and c.args[0].keyword is None \
                    and src.statement(src.start(c)) is src.statement(line) and not isinstance(c.args[0].value, cst.Name):
                inner = c.args[0].value
                yield ("keep-history", line, src.replace(c, inner.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                                                         if not isinstance(inner, (cst.Call, cst.Attribute, cst.Subscript)) else inner),
                       "the tensor itself instead of a copy")


_COPIES = ("tensor", "as_tensor", "Tensor", "FloatTensor", "Variable")


def checkpoint_non_reentrant(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG015: a reentrant checkpoint whose inputs do not require grad gives its parameters no
    gradient: pass use_reentrant=False (nearest the finding first)."""
    anchors = [ln for ln in [_loc(r.get("location"))[1] for r in related(f, "fix-at", "cut-by")]
               + [_loc(f.get("location"))[1], _loc((f.get("subject") or {}).get("created_at"))[1]] if ln]
    calls = [c for c in src.nodes(cst.Call)
             if (_dotted(c.func) or "").split(".")[-1] in ("checkpoint", "checkpoint_sequential")
             and not any(a.keyword is not None and a.keyword.value == "use_reentrant"
                         and isinstance(a.value, cst.Name) and a.value.value == "False" for a in c.args)]
    for c in sorted(calls, key=lambda c: min((abs(src.start(c) - a) for a in anchors), default=0))[:3]:
        yield ("checkpoint-non-reentrant", src.start(c), src.replace(c, _with_kwarg(c, "use_reentrant", "False")),
               "checkpoint(..., use_reentrant=False)")


def copy_into_param(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG016: `p.data = value` swaps the tensor the optimizer holds: copy the value into it instead."""
    line = _loc(f.get("location"))[1]
    stmt = src.statement(line) if line else None
    if stmt is None or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
        return
    a = stmt.body[0]
    t = a.targets[0].target
    if len(a.targets) != 1 or not isinstance(t, cst.Attribute) or t.attr.value != "data":
        return
    p, v = src.code(t.value), src.code(a.value)
    yield ("copy-into-param", line, src.replace(stmt, _stmt(f"{p}.data.copy_({v})").with_changes(leading_lines=stmt.leading_lines)),
           f"{p}.data.copy_(...): the same tensor, new values")
    block = cst.IndentedBlock(body=[_stmt(f"{p}.copy_({v})")])
    yield ("copy-into-param", line, src.replace(stmt, cst.With(items=[cst.WithItem(_expr("torch.no_grad()"))], body=block,
                                                               leading_lines=stmt.leading_lines)),
           f"with torch.no_grad(): {p}.copy_(...)")


# ---- the table -----------------------------------------------------------------------------------
FAMILIES: dict[str, list[Maker]] = {
    "GG001": [detach_source],
    "GG003": [reuse_graph],
    "GG007": [leaf_parameter],
    "GG012": [reduce_loss],
    "GG002": [detach_source],
    "GG004": [detach_carried, detach_source],
    "GG005": [out_of_place],
    "GG006": [no_grad_update],
    "GG008": [smooth_cut, keep_history, enable_grad],
    "GG009": [smooth_cut, keep_history, enable_grad],
    "GG013": [smooth_cut],
    "GG014": [enable_grad],
    "GG015": [checkpoint_non_reentrant],
    "GG016": [copy_into_param],
    "GG010": [zero_grad_before_backward],
    "GG011": [register_parameter, register_container, layer_to_init, add_to_optimizer],
    "GG101": [accumulate_detached],
    "GG104": [detach_copy_sources],
}
# the order families are tried in, before size: summing two losses never changes what training computes;
# retain_graph=True is tried after every other candidate, whatever their size: it makes the
# error go away in every program, and keeps the whole graph alive until the next backward
RANK = {"sum-losses": -1, "retain-graph": 1}
SILENT = {"GG008", "GG009", "GG011", "GG013"}  # no error from PyTorch: gradients are checked after the patch


def _only(f: dict[str, Any], file: str) -> dict[str, Any]:
    """`f` with the places in other files blanked, so that line numbers are read in `file` only."""
    def keep(loc: Any) -> Any:
        return loc if isinstance(loc, dict) and loc.get("file") == file else None

    subject = dict(f.get("subject") or {})
    if subject:
        subject["created_at"] = keep(subject.get("created_at"))
    return dict(f, subject=subject or None, location=keep(f.get("location")),
                related=[dict(r, location=keep(r.get("location"))) for r in f.get("related") or []])


def candidates_for(f: dict[str, Any], read: Callable[[str], str | None]) -> list[Candidate]:
    """Every candidate for finding `f`; `read(file)` gives a program file's text (None: not ours)."""
    out: list[Candidate] = []
    files = [_loc(f.get("location"))[0], _loc((f.get("subject") or {}).get("created_at"))[0]]
    files += [_loc(r.get("location"))[0] for r in f.get("related") or []]
    for file in [x for x in dict.fromkeys(files) if x]:
        text = read(file)
        if text is None:
            continue
        try:
            src = Source(text)
        except cst.ParserSyntaxError:
            continue
        mine = _only(f, file)
        for maker in FAMILIES.get(f.get("code", ""), []):
            try:
                for family, line, new, note in maker(src, mine, file):
                    variants = [new]
                    if f.get("code") in ("GG008", "GG009") and subject_name(f):
                        # the history is back: a `requires_grad = True` re-wrap of the loss would now fail
                        variants.append(_drop_rewraps(new, subject_name(f) or ""))
                    for v in variants:
                        if v != text and not any(c.text == v and c.file == file for c in out):
                            out.append(Candidate(f["code"], family, file, line, v, note))
            except Exception:  # one family failing on odd code must not stop the others
                continue
    return out
