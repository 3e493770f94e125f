"""Write an in-place op on a leaf that requires grad out of place, when the leaf is a value the
function builds at each call (GG006).

PyTorch refuses `x += y` on a leaf that requires grad. When the write updates a trained tensor,
the remedy is torch.no_grad() (manual_update.py). When the leaf is a value computed in the same
function call (an embedding output made to require grad by a hook, `text_embeds += aux * 0`), the
write is part of the computation and the rule's fix is `x = x + y`: only that local name is
rebound, no optimizer can hold a tensor made anew at every call, and wrapping the write in no_grad
would cut what the added term carries (its gradient) instead.

Proposed only when the finding's subject was created by an assignment to the same name in the
same function as the write, that function is not the module's top level, and the written value
does not read the leaf's `.grad` (which would make it an update).
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Source, assign_of, dotted, enclosing, loc, subject_name
from .inplace import AUG_OPS, INPLACE_METHODS
from .manual_zero import reads_grad

Out = Iterator[tuple[str, int, str, str]]


def out_of_place_local(src: Source, f: dict[str, Any], file: str) -> Out:
    """GG006 on a leaf built in the writing function: `x = x op y` instead of `x op= y`
    (`x = x.add(y)` instead of `x.add_(y)`)."""
    name = subject_name(f) or ""
    line = loc(f.get("location"))[1]
    made = loc((f.get("subject") or {}).get("created_at"))[1]
    stmt = src.statement(line) if line else None
    hit = assign_of(src, name, made)
    if not name or stmt is None or hit is None:
        return
    fn = enclosing(src, stmt, cst.FunctionDef)
    if fn is None or enclosing(src, hit[0], cst.FunctionDef) is not fn or src.start(hit[0]) >= src.start(stmt):
        return
    for small in stmt.body:
        if isinstance(small, cst.AugAssign) and type(small.operator) in AUG_OPS \
                and dotted(small.target) == name and not reads_grad(small.value, name):
            op = AUG_OPS[type(small.operator)]()
            new = cst.Assign(targets=[cst.AssignTarget(small.target)],
                             value=cst.BinaryOperation(left=small.target, operator=op, right=small.value))
            yield ("out-of-place-local", line, src.replace(small, new), f"{name} = {name} op ... (a value of this call)")
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                and isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value in INPLACE_METHODS \
                and dotted(small.value.func.value) == name \
                and not any(reads_grad(a.value, name) for a in small.value.args):
            call = small.value
            method = call.func.attr.value  # type: ignore[attr-defined]
            new_call = call.with_changes(func=call.func.with_changes(attr=cst.Name(method[:-1])))  # type: ignore[attr-defined]
            new = cst.Assign(targets=[cst.AssignTarget(call.func.value)], value=new_call)  # type: ignore[attr-defined]
            yield ("out-of-place-local", line, src.replace(small, new), f"{name} = {name}.{method[:-1]}(...)")
