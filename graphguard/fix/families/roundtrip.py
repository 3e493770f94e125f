"""Keep a tensor a tensor through a NumPy (or Python list) round trip (GG008, GG009).

`x.detach().cpu().numpy()` ... numpy ops ... `torch.from_numpy(a)` / `torch.tensor(a)` leaves the
graph where the value becomes an array and comes back as a new leaf. Where every NumPy op on the
way has a direct torch equivalent, the same computation is written with torch ops on the tensor:
the exit keeps the tensor (`.detach()`, `.numpy()`, `.tolist()` dropped), `np.clip` becomes
`torch.clamp`, `.astype(np.float32)` becomes `.float()`, and the re-entry becomes the value itself
(or `torch.stack` of a list filled element by element). A helper that only converts
(`def to_numpy(t): return t.detach().cpu().numpy()`) is bypassed at its call sites, not rewritten
(other callers may want the array).

The exit is the finding's cut-by / fix-at line; the values are followed forward from there through
assignments, `for` targets and `list.append` in the same function, up to the re-entry. When an op
on the way has no torch equivalent the family proposes nothing.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import libcst as cst

from ..tree import Names, Source, dotted, drop_rewraps, enclosing, parse_expr
from .copies import Rewrite, cut_lines, is_copy, stacked

__all__ = ["keep_tensor_roundtrip", "names_read", "statement_reads", "statement_at", "assigned_names"]

Candidate = tuple[str, int, str, str]

_LEAVE = ("numpy", "detach", "tolist")          # methods that take the value out of the graph
_SAME = {"abs", "exp", "log", "log1p", "expm1", "sqrt", "tanh", "sin", "cos", "square", "sign",
         "floor", "ceil", "round", "mean", "sum", "max", "min", "prod", "matmul", "where",
         "stack", "sigmoid", "maximum", "minimum", "clip", "exp2", "log2", "log10", "reciprocal"}
_RENAMED = {"concatenate": "cat", "clip": "clamp", "dot": "matmul", "transpose": "permute",
            "expand_dims": "unsqueeze", "amax": "amax", "amin": "amin"}
_CASTS = {"float32": "float", "float64": "double", "float16": "half", "float": "double",
          "int64": "long", "int32": "int"}


def _is_number(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _np_alias(src: Source) -> set[str]:
    """The names NumPy is imported as in this file (`np`, `numpy`)."""
    out = set()
    for imp in src.nodes(cst.Import):
        for a in imp.names:
            if dotted(a.name) == "numpy":
                out.add(a.asname.name.value if a.asname and isinstance(a.asname.name, cst.Name) else "numpy")
    return out


def _chain_without_exit(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x.detach().cpu().numpy()` -> `x.cpu()`: the chain with its graph-leaving calls dropped
    (None when it has none)."""
    changed = False

    def walk(n: cst.BaseExpression) -> cst.BaseExpression:
        nonlocal changed
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and not n.args \
                and n.func.attr.value in _LEAVE:
            changed = True
            return walk(n.func.value)
        if isinstance(n, cst.Attribute) and n.attr.value == "data":
            changed = True
            return walk(n.value)
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute):
            return n.with_changes(func=n.func.with_changes(value=walk(n.func.value)))
        return n

    out = walk(node)
    return out if changed else None


def _single_return(fn: cst.FunctionDef) -> cst.BaseExpression | None:
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else []
    stmts = [s for s in body if not (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1
                                      and isinstance(s.body[0], cst.Expr)
                                      and isinstance(s.body[0].value, cst.SimpleString))]
    if len(stmts) == 1 and isinstance(stmts[0], cst.SimpleStatementLine) and len(stmts[0].body) == 1 \
            and isinstance(stmts[0].body[0], cst.Return):
        return stmts[0].body[0].value
    return None


def _param_of(fn: cst.FunctionDef, expr: cst.BaseExpression | None, nps: set[str]) -> bool:
    """`expr` converts the function's only parameter (to an array, or back to a tensor)."""
    params = fn.params.params
    if len(params) != 1 or expr is None:
        return False
    p = params[0].name.value
    if _chain_without_exit(expr) is not None:
        base = expr
        while isinstance(base, (cst.Call, cst.Attribute)):
            base = base.func.value if isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute) \
                else base.value if isinstance(base, cst.Attribute) else base
            if isinstance(base, cst.Call) and not isinstance(base.func, cst.Attribute):
                return False
        return isinstance(base, cst.Name) and base.value == p
    if isinstance(expr, cst.Call) and expr.args and isinstance(expr.args[0].value, cst.Name) \
            and expr.args[0].value.value == p:
        return (dotted(expr.func) or "").endswith("from_numpy") or is_copy(expr)
    return False


class _Plan:
    """The edits of one round trip: original node id -> rewrite of the updated node."""

    def __init__(self, src: Source, nps: set[str], helpers: dict[str, str]) -> None:
        self.src, self.nps, self.helpers = src, nps, helpers
        self.edits: dict[int, Callable[[Any], Any]] = {}
        self.ok = True
        self.entered = False
        self.entry: cst.CSTNode | None = None  # the statement where the value re-enters torch

    def numpy_calls(self, stmt: cst.CSTNode, tainted: set[str], lists: set[str]) -> None:
        """Rewrite the NumPy calls, casts and helpers of one statement on the way."""
        for call in _calls(stmt):
            name = dotted(call.func) or ""
            head, _, last = name.rpartition(".")
            if head in self.nps:
                target = _RENAMED.get(last, last if last in _SAME else None)
                if target is None:
                    self.ok = False
                    return
                self.edits[id(call)] = _np_call(last, target)
            elif isinstance(call.func, cst.Attribute) and call.func.attr.value == "astype" and call.args:
                dt = (dotted(call.args[0].value) or "").rpartition(".")[2]
                cast = _CASTS.get(dt)
                if cast is None:
                    self.ok = False
                    return
                self.edits[id(call)] = lambda u, c=cast: cst.Call(func=u.func.with_changes(attr=cst.Name(c)))
            elif call.args and not names_read(call.args[0].value) & tainted:
                continue  # a call on other values (`torch.tensor(2.0)`, a helper on a constant)
            elif call.args and (name.endswith("from_numpy") or self.helpers.get(name) == "in"):
                self.entered = True
                self.edits[id(call)] = lambda u: u.args[0].value
                if _self_assign(stmt, call):  # `x = to_tensor(x)`: x is a tensor already
                    self.edits[id(stmt)] = lambda u: cst.RemoveFromParent()
            elif call.args and is_copy(call):
                self.entered = True
                arg = call.args[0].value
                if isinstance(arg, cst.Name) and arg.value in lists:
                    self.edits[id(call)] = lambda u: stacked(u) or u
                else:
                    self.edits[id(call)] = lambda u: u.args[0].value
            elif call.args and self.helpers.get(name) == "out":
                self.edits[id(call)] = lambda u: u.args[0].value
            elif isinstance(call.func, cst.Attribute) and call.func.attr.value in _LEAVE and not call.args:
                self.edits[id(call)] = lambda u: u.func.value


def _np_call(last: str, target: str) -> Callable[[cst.Call], cst.BaseExpression]:
    def rewrite(u: cst.Call) -> cst.BaseExpression:
        args = [a.with_changes(keyword=cst.Name("dim")) if a.keyword is not None and a.keyword.value == "axis" else a
                for a in u.args]
        name = target
        if last in ("maximum", "minimum") and len(args) == 2 and _is_number(args[1].value):
            # np.maximum(x, 0.0) is a clamp; torch.maximum needs two tensors
            key = "min" if last == "maximum" else "max"
            args = [args[0], args[1].with_changes(keyword=cst.Name(key), equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))]
            name = "clamp"
        return u.with_changes(func=parse_expr(f"torch.{name}"), args=args)
    return rewrite


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    out: list[cst.Call] = []

    class V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            out.append(n)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

    node.visit(V())
    return out


def names_read(node: cst.CSTNode) -> set[str]:
    seen = Names()
    node.visit(seen)
    return seen.names


def statement_reads(stmt: cst.CSTNode) -> set[str]:
    """Names a statement reads (a `for`: its iterable; an assignment: its value)."""
    if isinstance(stmt, cst.For):
        return names_read(stmt.iter)
    out: set[str] = set()
    for small in getattr(stmt, "body", ()):
        if isinstance(small, cst.Assign) and small.value is not None:
            out |= names_read(small.value)
        elif isinstance(small, cst.AugAssign):
            out |= names_read(small.value) | names_read(small.target)
        else:
            out |= names_read(small)
    return out


def statement_at(src: Source, line: int) -> cst.CSTNode | None:
    """The simple statement covering `line`, or the `for` whose header is on it."""
    stmt = src.statement(line)
    if stmt is not None:
        return stmt
    heads = [n for n in src.nodes(cst.For) if src.start(n) == line]
    return heads[-1] if heads else None


def assigned_names(stmt: cst.CSTNode) -> set[str]:
    out: set[str] = set()
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                for t in small.targets:
                    out |= names_read(t.target)
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                out |= names_read(small.target)
    elif isinstance(stmt, cst.For):
        out |= names_read(stmt.target)
    return out


def keep_tensor_roundtrip(src: Source, f: dict[str, Any], file: str) -> Iterator[Candidate]:
    """GG008/GG009: the round trip through NumPy (or a Python list) that starts at the finding's
    cut line, written with torch ops on the tensor itself."""
    nps = _np_alias(src)
    # helpers that only convert: `out` (tensor -> array) and `in` (array -> tensor)
    helpers: dict[str, str] = {}
    for fn in src.nodes(cst.FunctionDef):
        if enclosing(src, fn, cst.ClassDef) is None and enclosing(src, fn, cst.FunctionDef) is None:
            ret = _single_return(fn)
            if _param_of(fn, ret, nps):
                helpers[fn.name.value] = "in" if isinstance(ret, cst.Call) and (
                    (dotted(ret.func) or "").endswith("from_numpy") or is_copy(ret)) else "out"
    done: set[int] = set()
    for line in cut_lines(f):
        stmt = statement_at(src, line)
        if stmt is None:
            continue
        fn = enclosing(src, stmt, cst.FunctionDef)
        exits: list[tuple[cst.CSTNode, cst.CSTNode]] = []  # (the statement the value leaves at, its call)
        if fn is not None and helpers.get(fn.name.value) == "out":
            # a converting helper: the value leaves at each call site of the helper
            for call in src.nodes(cst.Call):
                if dotted(call.func) == fn.name.value:
                    exits.append((_stmt_of(src, call), call))
        else:
            for call in _calls(stmt.iter if isinstance(stmt, cst.For) else stmt):
                if _chain_without_exit(call) is not None and _leaves(call):
                    exits.append((_stmt_of(src, call), call))
                    break
        for where, call in exits:
            if where is None or id(where) in done:
                continue
            done.add(id(where))
            plan = _Plan(src, nps, helpers)
            if dotted(call.func) in helpers:
                plan.edits[id(call)] = lambda u: u.args[0].value
                if _self_assign(where, call):  # `x = to_numpy(x)` bypassed: nothing left to do
                    plan.edits[id(where)] = lambda u: cst.RemoveFromParent()
            else:
                plan.edits[id(call)] = lambda u: _chain_without_exit(u) or u
            _follow(src, plan, where)
            if not plan.ok or plan.entry is None:
                continue
            new = src.module.visit(Rewrite(plan.edits)).code
            for name in assigned_names(plan.entry):
                # the value that comes back has its history now: a `requires_grad = True` re-wrap would fail
                new = drop_rewraps(new, name)
            yield ("keep-tensor-roundtrip", src.start(where), new,
                   "the NumPy round trip written with torch ops on the tensor")


def _leaves(call: cst.Call) -> bool:
    """The outermost call of a chain that ends outside the graph (`.numpy()`, `.tolist()`)."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in ("numpy", "tolist")


def _stmt_of(src: Source, node: cst.CSTNode) -> cst.CSTNode | None:
    """The statement `node` belongs to: its simple statement, or the `for` whose iterable it is."""
    for a in src.ancestors(node):
        if isinstance(a, cst.For) and _inside(src, node, a.iter):
            return a
        if isinstance(a, cst.SimpleStatementLine):
            return a
    return None


def _inside(src: Source, node: cst.CSTNode, top: cst.CSTNode) -> bool:
    return node is top or any(a is top for a in src.ancestors(node))


def _follow(src: Source, plan: _Plan, start: cst.CSTNode) -> None:
    """Follow the values from `start` forward in the same function, rewriting each statement that
    reads them, until they re-enter torch."""
    fn = enclosing(src, start, cst.FunctionDef)
    tainted = set(assigned_names(start))
    lists: set[str] = set()
    stmts = [s for s in src.nodes((cst.SimpleStatementLine, cst.For))
             if src.start(s) > src.start(start) and enclosing(src, s, cst.FunctionDef) is fn]
    if isinstance(start, cst.For):
        stmts = [s for s in stmts if s is not start]
    for s in stmts:
        reads, targets = statement_reads(s), assigned_names(s)
        if not reads & tainted:
            continue
        # `xs.append(v)` fills a list element by element: xs carries the values on
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                        and isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value == "append" \
                        and isinstance(small.value.func.value, cst.Name):
                    lists.add(small.value.func.value.value)
                    tainted.add(small.value.func.value.value)
        before = plan.entered
        plan.numpy_calls(s.iter if isinstance(s, cst.For) else s, tainted, lists)
        if not plan.ok:
            return
        if plan.entered and not before:
            plan.entry = s
            return  # back in torch: what follows is the program's own tensor code
        tainted |= targets


def _self_assign(stmt: cst.CSTNode, call: cst.Call) -> bool:
    """`stmt` is `x = call(x)`."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)):
        return False
    a = stmt.body[0]
    return a.value is call and len(a.targets) == 1 and len(call.args) == 1 \
        and dotted(a.targets[0].target) is not None and dotted(a.targets[0].target) == dotted(call.args[0].value)
