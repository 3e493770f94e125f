"""LibCST helpers shared by the fix families: reading a finding's places, finding nodes by line,
and building the small edits every family makes."""
from __future__ import annotations

from typing import Any, Callable, Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider


def loc(d: Any) -> tuple[str | None, int | None]:
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


def parse_expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def parse_stmt(text: str) -> cst.BaseStatement:
    return cst.parse_statement(text)


def dotted(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def method_call(base: cst.BaseExpression, method: str) -> cst.Call:
    """`base.method()`, parenthesizing `base` when it is not an atom (a + b -> (a + b).method())."""
    atom = isinstance(base, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.Tuple,
                             cst.SimpleString, cst.Integer, cst.Float)) or bool(getattr(base, "lpar", ()))
    if not atom:
        base = base.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=base, attr=cst.Name(method)))


def insert_before(src: Source, stmt: cst.CSTNode, new: str) -> str:
    return src.replace(stmt, cst.FlattenSentinel([parse_stmt(new), stmt]))


def wrap_no_grad(src: Source, stmt: cst.BaseStatement) -> str:
    block = cst.IndentedBlock(body=[stmt.with_changes(leading_lines=[])])
    with_ = cst.With(items=[cst.WithItem(parse_expr("torch.no_grad()"))], body=block,
                     leading_lines=getattr(stmt, "leading_lines", ()))
    return src.replace(stmt, with_)


Maker = Callable[[Source, dict[str, Any], str], Iterator[tuple[str, int, str, str]]]


def assign_of(src: Source, name: str, line: int | None) -> tuple[cst.SimpleStatementLine, cst.Assign] | None:
    if line is None:
        return None
    stmt = src.statement(line)
    if stmt is None:
        return None
    for small in stmt.body:
        if isinstance(small, cst.Assign) and any(dotted(t.target) == name for t in small.targets):
            return stmt, small
    return None


def backward_calls(src: Source, line: int) -> list[cst.Call]:
    """`x.backward(...)`, `torch.autograd.backward(...)`, `autograd.grad(...)` calls on `line`."""
    out = []
    for call in src.nodes(cst.Call, line):
        name = dotted(call.func) or ""
        attr = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
        if attr == "backward" or name.endswith("autograd.backward") or name.endswith("autograd.grad"):
            if src.start(call) == line or src.statement(src.start(call)) is src.statement(line):
                out.append(call)
    return out


def with_kwarg(call: cst.Call, key: str, value: str) -> cst.Call:
    args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == key)]
    if args:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    new = cst.Arg(value=parse_expr(value), keyword=cst.Name(key),
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    return call.with_changes(args=[*args, new])


def reads_of(src: Source, name: str, line: int) -> list[cst.CSTNode]:
    """Reads of `name` (a dotted name) on `line`'s statement, assignment targets left out."""
    stmt = src.statement(line)
    if stmt is None:
        return []
    targets = {id(t.target) for s in stmt.body if isinstance(s, cst.Assign) for t in s.targets}
    return [n for n in src.nodes((cst.Name, cst.Attribute), line)
            if dotted(n) == name and src.statement(src.start(n)) is stmt
            and not is_attr_tail(src, n) and id(n) not in targets]


def is_attr_tail(src: Source, n: cst.CSTNode) -> bool:
    """`n` is the `x` of `obj.x` (another object's attribute), or `n` in `n.shape` / `n.fc.weight`
    (a part of it read): only `n` itself or `n.method(...)` reads the tensor `n`."""
    parent = src.parent.get(n)
    if not isinstance(parent, cst.Attribute):
        return False
    call = src.parent.get(parent)
    return parent.attr is n or not (isinstance(call, cst.Call) and call.func is parent)


def block_between(src: Source, first: int, last: int) -> list[cst.SimpleStatementLine]:
    """Simple statements starting in [first, last], in order."""
    return [s for s in src.nodes(cst.SimpleStatementLine) if first <= src.start(s) <= last]


def enclosing(src: Source, node: cst.CSTNode, kind: type) -> Any:
    return next((a for a in src.ancestors(node) if isinstance(a, kind)), None)


class Names(cst.CSTVisitor):
    """Bare names read in an expression (attribute tails left out)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False


def locals_of(fn: cst.FunctionDef) -> set[str]:
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


def self_attr_assigns(src: Source, attr: str) -> list[cst.Assign]:
    return [a for a in src.nodes(cst.Assign)
            if any((dotted(t.target) or "") == f"self.{attr}" for t in a.targets)]


NO_GRAD = ("torch.no_grad", "no_grad", "torch.inference_mode", "inference_mode")


def grad_off(call: cst.BaseExpression) -> bool:
    """`torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(False)`."""
    if not isinstance(call, cst.Call):
        return False
    name = dotted(call.func) or ""
    if name in NO_GRAD:
        return True
    return name.endswith("set_grad_enabled") and len(call.args) == 1 \
        and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "False"


def is_rewrap(src: Source, small: cst.CSTNode, name: str) -> bool:
    """`name.requires_grad = True`, `name.requires_grad_()`, `name = Variable(name, requires_grad=True)`
    or `name = torch.tensor(name, requires_grad=True)`: a loss made a new leaf so backward runs."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        t = small.targets[0].target
        if isinstance(t, cst.Attribute) and t.attr.value == "requires_grad" and src.code(t.value).strip() == name:
            return isinstance(small.value, cst.Name) and small.value.value == "True"
        v = small.value
        if src.code(t).strip() == name and isinstance(v, cst.Call) and v.args \
                and (dotted(v.func) or "").split(".")[-1] in ("Variable", "tensor", "as_tensor") \
                and src.code(v.args[0].value).strip() == name:
            return any(a.keyword is not None and a.keyword.value == "requires_grad" for a in v.args)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
            and isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value == "requires_grad_":
        return src.code(small.value.func.value).strip() == name
    return False


def drop_rewraps(text: str, name: str) -> str:
    src = Source(text)
    hits = [s for s in src.nodes(cst.SimpleStatementLine) if len(s.body) == 1 and is_rewrap(src, s.body[0], name)]

    class Drop(cst.CSTTransformer):
        def leave_SimpleStatementLine(self, o: cst.SimpleStatementLine, u: cst.SimpleStatementLine) -> Any:
            return cst.RemoveFromParent() if any(o is h for h in hits) else u

        def leave_IndentedBlock(self, o: cst.IndentedBlock, u: cst.IndentedBlock) -> cst.IndentedBlock:
            return u if u.body else u.with_changes(body=[parse_stmt("pass")])

    return src.module.visit(Drop()).code if hits else text


def upstream(src: Source, lines: list[int], hops: int = 2) -> list[int]:
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
            seen = Names()
            for small in stmt.body:
                (small.value if isinstance(small, (cst.Assign, cst.AugAssign)) else small).visit(seen)  # type: ignore[union-attr]
            fn = enclosing(src, stmt, cst.FunctionDef)
            for name in seen.names:
                before = [a for a in assigns if src.start(a) < src.start(stmt) and enclosing(src, a, cst.FunctionDef) is fn
                          and any(dotted(t.target) == name for t in a.targets)]
                if before and src.start(before[-1]) not in out:
                    out.append(src.start(before[-1]))
                    nxt.append(src.start(before[-1]))
        frontier = nxt
    return out


COPIES = ("tensor", "as_tensor", "Tensor", "FloatTensor", "Variable")


def paren(code: str) -> str:
    """`code` as an operand: parenthesized unless it is a name, attribute, call or subscript."""
    node = parse_expr(code)
    return code if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) else f"({code})"
