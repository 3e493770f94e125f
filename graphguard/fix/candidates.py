"""Candidate source patches for one finding, written with LibCST (formatting and comments kept).

Every candidate is built from the finding's data only: its code, its subject's name and creation
line, its location and its related places (cut-by, modified-at, saved-at, fix-at), and the
source's syntax tree at those lines. A candidate is a whole new text of one file; verify.py turns
it into line edits, runs it and decides.
"""
from __future__ import annotations

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
    if loop is not None and isinstance(loop.body, cst.IndentedBlock) and loop.body.body:
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
            if fname in ("torch.round", "torch.floor", "torch.ceil") and call.args:
                x = src.code(call.args[0].value)
                yield ("straight-through", line, src.replace(call, _expr(f"({x} + ({fname}({x}) - {_paren(x)}).detach())")),
                       f"straight-through estimator for {fname}")
            elif attr in ("round", "floor", "ceil") and not call.args:
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


FAMILIES: dict[str, list[Maker]] = {
    "GG001": [detach_source],
    "GG002": [detach_source],
    "GG004": [detach_carried, detach_source],
    "GG005": [out_of_place],
    "GG006": [no_grad_update],
    "GG008": [smooth_cut],
    "GG009": [smooth_cut],
    "GG013": [smooth_cut],
    "GG010": [zero_grad_before_backward],
    "GG011": [register_parameter],
    "GG101": [accumulate_detached],
    "GG104": [detach_copy_sources],
}
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
                    if new != text and not any(c.text == new and c.file == file for c in out):
                        out.append(Candidate(f["code"], family, file, line, new, note))
            except Exception:  # one family failing on odd code must not stop the others
                continue
    return out
