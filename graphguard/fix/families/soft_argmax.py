"""A soft argmax for a loss computed from argmax indices (GG009, GG008): the expected index under the
softmax, which has a gradient where argmax has none."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, Source, dotted, parse_expr, paren

_SOFTMAX = ("torch.softmax", "F.softmax", "torch.nn.functional.softmax", "nn.functional.softmax")


def _argmax(src: Source, call: cst.Call) -> tuple[str, str] | None:
    """(the tensor's code, the dim's code) of `torch.argmax(x, dim)` or `x.argmax(dim)`; None without a dim."""
    name = dotted(call.func) or ""
    method = isinstance(call.func, cst.Attribute) and call.func.attr.value == "argmax" and name != "torch.argmax"
    args = list(call.args)
    if name == "torch.argmax" and args and args[0].keyword is None:
        x, rest = src.code(args[0].value), args[1:]
    elif method:
        x, rest = src.code(call.func.value), args  # type: ignore[attr-defined]
    else:
        return None
    dim = next((a for a in rest if a.keyword is None or a.keyword.value in ("dim", "axis")), None)
    if dim is None or any(a.keyword is not None and a.keyword.value == "keepdim" for a in rest):
        return None
    return x, src.code(dim.value)


def _max_indices(src: Source, node: cst.CSTNode) -> tuple[str, str] | None:
    """(the tensor's code, the dim's code) of the indices half of a max along a dim, argmax by
    another spelling: `torch.max(x, dim)[1]`, `x.max(dim)[1]`, `torch.max(x, dim).indices`."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
            and isinstance(node.slice[0].slice.value, cst.Integer) and node.slice[0].slice.value.value == "1":
        call = node.value
    elif isinstance(node, cst.Attribute) and node.attr.value == "indices":
        call = node.value
    else:
        return None
    if not isinstance(call, cst.Call):
        return None
    name = dotted(call.func) or ""
    args = list(call.args)
    if name == "torch.max" and len(args) >= 2 and args[0].keyword is None:
        x, rest = src.code(args[0].value), args[1:]
    elif isinstance(call.func, cst.Attribute) and call.func.attr.value == "max" and name != "torch.max" and args:
        x, rest = src.code(call.func.value), args
    else:
        return None
    dim = next((a for a in rest if a.keyword is None or a.keyword.value == "dim"), None)
    if dim is None or any(a.keyword is not None and a.keyword.value == "keepdim" for a in rest):
        return None
    return x, src.code(dim.value)


def _selection(src: Source, node: cst.CSTNode) -> tuple[str, str] | None:
    """(tensor, dim) of an argmax, in any of its spellings."""
    if isinstance(node, cst.Call):
        return _argmax(src, node)
    return _max_indices(src, node)


def _is_softmax(src: Source, code: str) -> bool:
    node = parse_expr(code)
    if not isinstance(node, cst.Call):
        return False
    name = dotted(node.func) or ""
    return name in _SOFTMAX or (isinstance(node.func, cst.Attribute) and node.func.attr.value == "softmax")


class _Soft(cst.CSTTransformer):
    def __init__(self, src: Source, hits: list[cst.CSTNode]) -> None:
        self.src, self.hits = src, hits

    def leave_Call(self, o: cst.Call, u: cst.Call) -> cst.BaseExpression:
        return self._soft(o, u)

    def leave_Subscript(self, o: cst.Subscript, u: cst.Subscript) -> cst.BaseExpression:
        return self._soft(o, u)

    def leave_Attribute(self, o: cst.Attribute, u: cst.Attribute) -> cst.BaseExpression:
        return self._soft(o, u)

    def _soft(self, o: cst.BaseExpression, u: cst.BaseExpression) -> cst.BaseExpression:
        if not any(o is h for h in self.hits):
            return u
        x, dim = _selection(self.src, o)  # type: ignore[misc]
        base = x
        if _is_softmax(self.src, x):
            probs = x
            node = parse_expr(x)
            if isinstance(node, cst.Call) and (dotted(node.func) or "") in _SOFTMAX and node.args:
                base = cst.Module([]).code_for_node(node.args[0].value)
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                base = cst.Module([]).code_for_node(node.func.value)
        else:
            probs = f"torch.softmax({x}, dim={dim})"
        # the expected index along `dim` (the softmax keeps its input's shape and dtype), with `dim`
        # moved last so that the row of indices broadcasts against it
        return parse_expr(f"({paren(probs)}.movedim({dim}, -1) * torch.arange({paren(base)}.shape[{dim}], "
                          f"dtype={paren(base)}.dtype)).sum(-1)")


def soft_argmax(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG009/GG008: the loss reads argmax indices (no gradient; `argmax` or the indices of a `max`
    along a dim): read the softmax's expected index instead, on each statement the finding names as
    the cut."""
    done: list[cst.CSTNode] = []
    for r in related(f, "cut-by", "fix-at"):
        line = loc(r.get("location"))[1]
        stmt = src.statement(line) if line else None
        if stmt is None or any(stmt is d for d in done):
            continue
        done.append(stmt)
        hits = [c for c in src.nodes((cst.Call, cst.Subscript, cst.Attribute))
                if src.statement(src.start(c)) is stmt and _selection(src, c)]
        if hits:
            new = stmt.visit(_Soft(src, hits))
            yield ("soft-argmax", src.start(stmt), src.replace(stmt, new), "the softmax's expected index instead of argmax")
