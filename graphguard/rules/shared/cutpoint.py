"""Where a loss lost its history, and the tensor that was cut, named as the user wrote it.

GG009 (and the rules that explain a missing gradient by a cut) report the tensor where the
history was dropped, not the loss at the end of the chain: `output_coor_ = torch.stack([argmax
...])`, `inside_x = (grid >= x1) * ...`, the accumulator filled under `torch.no_grad()`, the fresh
leaf that a helper re-wraps with `requires_grad = True`. Names and lines come from the recorded cut
sites and the user's source; the decision to report is the rule's, made from what the program did.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ...capture.state import Cut
from ...lookup.assigned import assigned_target
from ...lookup.made import escaping_target, grad_off_block, made_by
from ...lookup.source import assigned_targets
from ...model import Related, Role, SourceLoc
from ..context import RuleContext

__all__ = ["CutPoint", "cut_point", "made_point", "leaf_point", "SCALAR_OPS"]

# cuts whose output is a Python value (or an array): the tensor that re-enters later is the one
# the user must fix, not the float
SCALAR_OPS = frozenset({"item", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__"})


@dataclass
class CutPoint:
    """The tensor where the history was dropped: its name as written, and the line."""

    name: str | None
    where: SourceLoc | None
    related: list[Related] = field(default_factory=list)  # extra places (fix-at a no_grad block...)


def cut_point(ctx: RuleContext, cut: Cut) -> CutPoint:
    """The tensor `cut` made, as written: the target of the statement at the cut's line (through a
    helper's `return`). Under `torch.no_grad()`, the op inside the model is not what the user
    wrote wrong: the `with` block in the user's frames is, and the value it hands out (`losses_q`)."""
    if not cut.site:
        return CutPoint(None, None)
    site = list(cut.site)
    if cut.no_grad:
        for k, fr in enumerate(site):
            block = grad_off_block(fr.file, fr.line)
            if block is None:
                continue
            rel = ctx.fix_at(SourceLoc(fr.file, block.lineno, fr.function,
                                       _line(fr.file, block.lineno)), None, "torch.no_grad()")
            out = escaping_target(fr.file, block)
            if out is not None:
                return CutPoint(out[0], out[1], rel)
            w = assigned_target(site[k:], max_frames=1)
            return CutPoint(w[0] if w else None, SourceLoc.from_frame(fr), rel)
    w = assigned_target(site)
    if w is not None:
        return CutPoint(w[0], SourceLoc.from_frame(w[1]))
    targets = assigned_targets(site[0].file, site[0].line)
    return CutPoint(targets[0] if len(targets) == 1 else None, SourceLoc.from_frame(site[0]))


def made_point(ctx: RuleContext, t: Any) -> CutPoint | None:
    """For a tensor with no recorded history (a fresh tensor, a re-wrapped value): the statement
    that made it, read from the source from its live name (into the user's helpers that return it),
    with the `x.requires_grad = True` lines that re-enabled grad as fix-at."""
    hit = ctx.name_of(t)
    if hit is None:
        return None
    made = made_by(hit.name, hit.frame)
    if made is None:
        return None
    rel = [Related(Role.FIX_AT, made.name, "requires_grad = True", loc) for loc in made.rewraps]
    return CutPoint(made.name, made.loc, rel)


def leaf_point(ctx: RuleContext, leaf: torch.Tensor) -> CutPoint | None:
    """A fresh leaf, as written where it was made (`loss_qfl = torch.tensor(0., requires_grad=True)`)
    when the guard recorded it, else from its live name and the source."""
    rec = ctx.leaf_record(leaf)
    if rec is not None and rec.site:
        w = assigned_target(rec.site)
        if w is not None:
            return CutPoint(w[0], SourceLoc.from_frame(w[1]))
        made = made_point(ctx, leaf)  # `value.requires_grad_()`: the statement that made `value`
        if made is not None and made.name:
            made.related += [Related(Role.FIX_AT, made.name, "requires_grad_()",
                                     SourceLoc.from_frame(rec.site[0]))]
            return made
        hit = ctx.name_of(leaf)
        return CutPoint(hit.name if hit else None, SourceLoc.from_frame(rec.site[0]))
    return made_point(ctx, leaf)


def _line(file: str, line: int) -> str:
    import linecache
    return linecache.getline(file, line).strip()
