"""Write an in-place op out of place, or drop `inplace=True` (GG005)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, Source


_INPLACE_METHODS = {"add_", "sub_", "mul_", "div_", "clamp_", "relu_", "sigmoid_", "tanh_", "exp_",
                    "masked_fill_", "pow_", "abs_", "neg_", "sqrt_", "fill_", "zero_", "copy_", "clamp_min_",
                    "clamp_max_", "addcmul_", "addcdiv_", "softmax_", "log_", "floor_", "round_", "t_"}


_AUG_OPS = {cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
            cst.DivideAssign: cst.Divide, cst.PowerAssign: cst.Power, cst.MatrixMultiplyAssign: cst.MatrixMultiply}

# shared with local_inplace.py (the same rewrite for GG006)
AUG_OPS, INPLACE_METHODS = _AUG_OPS, _INPLACE_METHODS


def out_of_place(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG005: write the in-place op out of place, or drop `inplace=True`."""
    lines = [loc(r.get("location"))[1] for r in related(f, "modified-at", "fix-at")]
    lines.append(loc(f.get("location"))[1])
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
