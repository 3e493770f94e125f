"""Smooth surrogates and straight-through estimators for hard cuts (GG008, GG009, GG013)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, Source, parse_expr, dotted, paren


# smooth surrogates: comparisons become sigmoids, & becomes *, where(c, 1, 0) becomes c
_SHARPNESS = ("5.0", "20.0")


def _is_const(node: cst.BaseExpression, value: float) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return float(node.value) == value
        except ValueError:
            return False
    if isinstance(node, cst.Call) and dotted(node.func) in ("torch.tensor", "torch.as_tensor") and node.args:
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
        prod = cst.BinaryOperation(left=parse_expr(self.k), operator=cst.Multiply(), right=diff)
        return cst.Call(func=parse_expr("torch.sigmoid"), args=[cst.Arg(prod)])

    def leave_BinaryOperation(self, original: cst.BinaryOperation, updated: cst.BinaryOperation) -> cst.BaseExpression:
        if isinstance(updated.operator, cst.BitAnd) and self.changed:
            return updated.with_changes(operator=cst.Multiply())
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        name = dotted(updated.func) or ""
        if name.endswith("where") and len(updated.args) == 3 and self.changed \
                and _is_const(updated.args[1].value, 1.0) and _is_const(updated.args[2].value, 0.0):
            return updated.args[0].value.with_changes(lpar=[], rpar=[]) \
                if isinstance(updated.args[0].value, cst.Call) else updated.args[0].value
        if isinstance(updated.func, cst.Attribute) and updated.func.attr.value in ("float", "double", "half") \
                and not updated.args and self.changed and isinstance(updated.func.value, cst.Call) \
                and dotted(updated.func.value.func) == "torch.sigmoid":
            return updated.func.value.with_changes(lpar=[], rpar=[])
        return updated


def smooth_cut(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG008/GG009: a smooth surrogate for a hard comparison mask, a straight-through estimator for
    round, the tensor itself instead of its .item()/.detach() copy."""
    cuts = related(f, "cut-by", "fix-at")
    done: set[int] = set()
    for r in cuts:
        line = loc(r.get("location"))[1]
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
            fname = dotted(call.func) or ""
            attr = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            if fname in ("torch.round", "torch.floor", "torch.ceil", "torch.sign") and call.args:
                x = src.code(call.args[0].value)
                yield ("straight-through", line, src.replace(call, parse_expr(f"({x} + ({fname}({x}) - {paren(x)}).detach())")),
                       f"straight-through estimator for {fname}")
            elif attr in ("round", "floor", "ceil", "sign") and not call.args:
                x = src.code(call.func.value)  # type: ignore[attr-defined]
                yield ("straight-through", line, src.replace(call, parse_expr(f"({x} + ({paren(x)}.{attr}() - {paren(x)}).detach())")),
                       f"straight-through estimator for .{attr}()")
            elif attr in ("item", "detach") and not call.args:
                yield ("keep-tensor", line, src.replace(call, call.func.value.with_changes()),  # type: ignore[attr-defined]
                       f"keep the tensor instead of .{attr}()")
        del text
