"""Keep an optimized tensor a leaf (GG007)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, Source, parse_expr, method_call


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
    lines = [loc(r.get("location"))[1] for r in related(f, "made-non-leaf", "fix-at")]
    lines.append(loc((f.get("subject") or {}).get("created_at"))[1])
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
                    yield ("requires-grad-last", line, src.replace(v, method_call(moved, "requires_grad_")),  # type: ignore[arg-type]
                           "create the tensor first, then .requires_grad_()")
                yield ("new-leaf", line, src.replace(v, method_call(method_call(v, "detach"), "requires_grad_")),
                       "(...).detach().requires_grad_(): a leaf again")
                yield ("wrap-parameter", line, src.replace(v, cst.Call(func=parse_expr("torch.nn.Parameter"), args=[cst.Arg(v)])),
                       "nn.Parameter(...) after the op")
        break
