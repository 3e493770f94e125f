"""Give the optimizer a module that replaced part of the model during training (GG011).

The model is changed after the optimizer was built (`model.cell.grow(2)` rebinds `self.op` to a
wider layer, `model.head = nn.Linear(...)` in the middle of the loop): backward fills the new
layer's gradients, but the optimizer still holds the old one, so the new layer never trains. The
remedy the rule gives is `optimizer.add_param_group({'params': ...})`; it goes right after the
statement in the training loop that made the change, so it runs once per change, over the module
that holds the finding's parameter, with the optimizer whose `step()` follows the backward (its
defaults apply to the group, as they would have at construction). The other parameters keep their
optimizer state, which rebuilding the optimizer would throw away.

The change is the last statement before the backward, in the same loop, that assigns the module's
name or one of its owners (`model.cell.op = ...`, `model.cell = ...`) or calls a method of one of
its owners below the model itself (`model.cell.grow(...)`). Had it run at every iteration, the
group would hold parameters the optimizer already has and the verification run would fail.
"""
from __future__ import annotations

import re
from typing import Any, Iterator

import libcst as cst

from ..tree import Source, dotted, loc, parse_stmt, related, subject_name

Out = Iterator[tuple[str, int, str, str]]


def _step_owner(src: Source, loop: cst.CSTNode, after: int) -> str | None:
    """The optimizer whose `.step()` is called in `loop` after line `after`: one built by a class
    of `optim` when there is one (a scheduler steps too), else the first."""
    built = {dotted(t.target) for a in src.nodes(cst.Assign) if isinstance(a.value, cst.Call)
             and re.search(r"(^|\.)optim\.[A-Z]\w*$", dotted(a.value.func) or "") for t in a.targets}
    steps = [dotted(call.func.value) for call in src.nodes(cst.Call)
             if isinstance(call.func, cst.Attribute) and call.func.attr.value == "step" and not call.args
             and src.start(call) > after and any(a is loop for a in src.ancestors(call))]
    steps = [s for s in steps if s]
    return next((s for s in steps if s in built), steps[0] if steps else None)


def _loop_of(src: Source, stmt: cst.CSTNode) -> cst.CSTNode | None:
    return next((a for a in src.ancestors(stmt) if isinstance(a, (cst.For, cst.While))), None)


def _changes(src: Source, small: cst.CSTNode, owners: list[str]) -> bool:
    """`small` rebinds one of `owners` or calls a method of one of them."""
    if isinstance(small, cst.Assign):
        return any((dotted(t.target) or "") in owners for t in small.targets)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
            and isinstance(small.value.func, cst.Attribute):
        return (dotted(small.value.func.value) or "") in owners
    return False


def add_group_after_change(src: Source, f: dict[str, Any], file: str) -> Out:
    """GG011 on a parameter the backward reached but no optimizer holds, in a training loop that
    changes the model: `opt.add_param_group({'params': <module>.parameters()})` after the change."""
    name = subject_name(f) or ""
    parts = name.split(".")
    kind = (f.get("subject") or {}).get("kind")
    if "[" in name or "(" in name or kind not in ("parameter", "module"):
        return
    module = name if kind == "module" else ".".join(parts[:-1])
    # the module and each owner below the model's own name: `model.cell.op`, `model.cell`
    owners = [".".join(parts[:i]) for i in range(len(module.split(".")), 1, -1)]
    if not owners:
        return
    lines = [loc(r.get("location"))[1] for r in related(f, "reached-by")] + [loc(f.get("location"))[1]]
    stmt = next((s for s in (src.statement(ln) for ln in lines if ln)
                 if s is not None and _loop_of(src, s) is not None), None)
    if stmt is None:
        return
    loop = _loop_of(src, stmt)
    opt = _step_owner(src, loop, src.start(stmt))
    if not opt:
        return
    # where the finding says the module was attached, else the last change of an owner in the loop
    marked = [src.statement(ln) for ln in (loc(r.get("location"))[1] for r in related(f, "assigned-at")) if ln]
    found = [s for s in marked if s is not None and src.start(s) < src.start(stmt)
             and any(a is loop for a in src.ancestors(s))]
    found = found or [s for s in src.nodes(cst.SimpleStatementLine)
                      if src.start(s) < src.start(stmt) and any(a is loop for a in src.ancestors(s))
                      and any(_changes(src, small, owners) for small in s.body)]
    if not found:
        return
    change = found[-1]
    add = parse_stmt(f"{opt}.add_param_group({{'params': {module}.parameters()}})")
    yield ("add-param-group-after-change", src.start(change), src.replace(change, cst.FlattenSentinel([change, add])),
           f"give {opt} the parameters of {module} once the model is changed")
