"""Move a gradient clear that sits between the backward and the step to just after the step (GG010)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, Source


def _clear_call(stmt: cst.SimpleStatementLine) -> bool:
    """`x.zero_grad(...)` alone on its line (the clear the finding's cleared-at points to)."""
    if len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Expr):
        return False
    call = stmt.body[0].value
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
        and call.func.attr.value == "zero_grad"


def move_zero_grad_after_step(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG010: the gradients the backward filled are cleared before the step reads them. Moving that
    very clear to right after the step keeps every iteration's arithmetic (the next backward still
    starts from zero) and keeps gradient accumulation intact when the step only runs every N
    micro-batches (a clear before each backward would wipe the accumulated ones)."""
    step_line = loc(f.get("location"))[1]
    step = src.statement(step_line) if step_line else None
    if step is None:
        return
    step_block = src.parent.get(step)
    for r in related(f, "cleared-at"):
        line = loc(r.get("location"))[1]
        clear = src.statement(line) if line else None
        if clear is None or clear is step or not _clear_call(clear):
            continue
        block = src.parent.get(clear)
        if len(getattr(block, "body", ())) < 2:
            continue  # the clear is its block's only statement: removing it would empty the block
        moved = clear.with_changes(leading_lines=[])
        if block is step_block:
            body = [s for s in step_block.body if s is not clear]  # type: ignore[union-attr]
            at = body.index(step) + 1
            new_block = step_block.with_changes(body=[*body[:at], moved, *body[at:]])  # type: ignore[union-attr]
            text = src.replace(step_block, new_block)  # type: ignore[arg-type]
        else:
            if any(a is clear for a in src.ancestors(step)) or any(a is step for a in src.ancestors(clear)):
                continue
            # two blocks: drop the clear from its own, then put it after the step in the step's
            class Move(cst.CSTTransformer):
                def leave_SimpleStatementLine(self, o: cst.SimpleStatementLine, u: cst.SimpleStatementLine) -> Any:
                    if o is clear:
                        return cst.RemoveFromParent()
                    if o is step:
                        return cst.FlattenSentinel([u, moved])
                    return u

            text = src.module.visit(Move()).code
        yield ("zero-grad-after-step", src.start(clear), text,
               f"{src.code(clear.body[0]).strip()} moved after the step")
