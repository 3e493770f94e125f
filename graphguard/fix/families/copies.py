"""Keep the history of tensors copied into a new tensor (GG008, GG009): `torch.tensor(list)`,
`torch.Tensor(list)`, `torch.FloatTensor(list)` build a new leaf from the elements' values; the same
values with their history are `torch.stack(list)`.

`torch.tensor` of a flat list of one-element tensors gives one value per element (shape [N],
whether the elements are 0-d or [1]), so the stack is flattened to the same shape: a [N, 1] stack
would broadcast silently against an [N] tensor. The copy's dtype / device become a `.to(...)`,
its `requires_grad=True` (a re-wrap) is dropped: the stack has a history.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import libcst as cst

from ..tree import Source, dotted, drop_rewraps, loc, parse_expr, related

__all__ = ["stack_copies", "stacked", "is_copy", "literal_only", "Rewrite"]

Candidate = tuple[str, int, str, str]

# constructors that copy the values of their argument into a new leaf (with the cast they imply)
_COPY_CAST = {"tensor": None, "as_tensor": None, "Tensor": None, "FloatTensor": "float",
              "DoubleTensor": "double", "HalfTensor": "half", "BFloat16Tensor": "bfloat16"}


def is_copy(call: cst.Call) -> bool:
    """`torch.tensor(x, ...)`, `torch.Tensor(x)`, `torch.FloatTensor(x)`... (one positional argument)."""
    name = dotted(call.func) or ""
    head, _, last = name.rpartition(".")
    return last in _COPY_CAST and (head.endswith("torch") or head == "") and bool(call.args) \
        and call.args[0].keyword is None and call.args[0].star == ""


def literal_only(node: cst.CSTNode) -> bool:
    """Numbers (and lists/tuples of them) only: a copy of a literal has no history to keep."""
    class Seen(cst.CSTVisitor):
        found = False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value not in ("True", "False", "None"):
                self.found = True

    s = Seen()
    node.visit(s)
    return not s.found


def _nested(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.List, cst.Tuple)):
        return any(isinstance(e.value, (cst.List, cst.Tuple, cst.ListComp)) for e in node.elements)
    if isinstance(node, cst.ListComp):
        return isinstance(node.elt, (cst.List, cst.Tuple, cst.ListComp))
    return False


def stacked(call: cst.Call) -> cst.BaseExpression | None:
    """The copy `call` written as a stack of its elements with their history, or None when its
    argument is not a flat sequence of tensors (a literal, a nested list, a star argument)."""
    if not is_copy(call):
        return None
    arg = call.args[0].value
    if literal_only(arg) or _nested(arg) or isinstance(arg, (cst.SimpleString, cst.Integer, cst.Float)):
        return None
    if not isinstance(arg, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp, cst.Name, cst.Attribute)):
        # (an element `d['x']` or a call's result is a single value far more often than a list)
        return None
    if isinstance(arg, cst.GeneratorExp):  # stack wants a sequence
        arg = cst.ListComp(elt=arg.elt, for_in=arg.for_in)
    kw = {a.keyword.value: a.value for a in call.args[1:] if a.keyword is not None}
    out: cst.BaseExpression = cst.Call(func=parse_expr("torch.stack"), args=[cst.Arg(arg)])
    out = cst.Call(func=cst.Attribute(value=out, attr=cst.Name("flatten")))
    cast = _COPY_CAST[(dotted(call.func) or "").rpartition(".")[2]]
    to = [cst.Arg(kw[k]) for k in ("device", "dtype") if k in kw]
    if to:
        to[-1] = to[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        to = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in to[:-1]] + to[-1:]
        out = cst.Call(func=cst.Attribute(value=out, attr=cst.Name("to")), args=to)
    elif cast:
        out = cst.Call(func=cst.Attribute(value=out, attr=cst.Name(cast)))
    return out


class Rewrite(cst.CSTTransformer):
    """Replace original nodes (by identity) with what `edits[id(node)](updated)` returns."""

    def __init__(self, edits: dict[int, Callable[[Any], Any]]) -> None:
        self.edits = edits

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Any:
        fn = self.edits.get(id(original))
        return fn(updated) if fn is not None else updated


def cut_lines(f: dict[str, Any]) -> list[int]:
    """The finding's cut-by and fix-at lines, then its subject's creation line."""
    lines = [loc(r.get("location"))[1] for r in related(f, "cut-by", "fix-at")]
    lines.append(loc((f.get("subject") or {}).get("created_at"))[1])
    return [ln for ln in dict.fromkeys(lines) if ln]


def stack_copies(src: Source, f: dict[str, Any], file: str) -> Iterator[Candidate]:
    """GG008/GG009: a tensor copy of a list of tensors, at the line where the finding says the
    gradient was cut, becomes `torch.stack(list).flatten()`."""
    seen: set[int] = set()
    for line in cut_lines(f):
        stmt = src.statement(line)
        if stmt is None:
            continue
        for call in src.nodes(cst.Call, line):
            if id(call) in seen or src.statement(src.start(call)) is not stmt:
                continue
            seen.add(id(call))
            new = stacked(call)
            if new is None:
                continue
            text = src.replace(call, new)
            for small in stmt.body:
                # the stack has a history: a `requires_grad = True` re-wrap of it would now fail
                for t in small.targets if isinstance(small, cst.Assign) else ():
                    if dotted(t.target):
                        text = drop_rewraps(text, dotted(t.target) or "")
            yield ("stack-copies", src.start(call), text,
                   "torch.stack of the elements (with their history) instead of a copy of their values")
