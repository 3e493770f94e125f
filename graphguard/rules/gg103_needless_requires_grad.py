"""GG103 needless-requires-grad: a leaf made with requires_grad=True whose gradient nobody uses."""
from __future__ import annotations


from typing import Iterator

from ..events import GuardExit
from ..model import Finding, Message, Subject
from .base import Detection, Rule, display
from .context import Evidence, RuleContext, assigned_name

__all__ = ["NeedlessRequiresGrad"]


class NeedlessRequiresGrad(Rule):
    """## What it does
    At the end of the guard, lists the lines that made tensors with `requires_grad=True` (or
    `requires_grad_()`) whose gradient was never used: not handed to an optimizer, `.grad` never
    read, never an input of `torch.autograd.grad`.

    ## Why is this bad?
    Autograd records every op on such tensors and computes their gradients for nothing; a fixed
    reference with history is also the usual cause of GG001/GG002.

    ## Example
    ```python
    for x in data:
        canvas = torch.zeros(128, 128, requires_grad=True)   # fresh each iteration, never optimized
        loss = F.mse_loss(render(canvas, params), x)
    ```

    ## Use instead
    ```python
        canvas = torch.zeros(128, 128)
    ```

    ## Known problems
    A gradient read by code the guard cannot see (a C++ extension, a hook) counts as unused.
    """

    code = "GG103"
    slug = "needless-requires-grad"
    severity = "info"
    summary = "a leaf created with requires_grad=True whose gradient nobody uses"
    messages = (
        Message("unused-gradient", "info",
                "{name} is created with requires_grad=True ({count}) but its gradient is never used. Fix: {fix}",
                "a line made requires-grad leaves and no optimizer, .grad read or autograd.grad used them"),
    )
    events = (GuardExit,)

    def detect(self, event: GuardExit, ev: Evidence) -> Iterator[Detection]:
        live = {}
        for t, rec in ev.recorded_leaves():
            live.setdefault(id(rec.stats), t)
        for stats in ev.leaf_sites():
            if stats.used or not stats.site or ev.claimed_by_superseding(self, stats):
                continue
            t = live.get(id(stats))
            if (event.exc is not None and stats.first_iteration >= ev.iteration
                    and t is not None and t.grad is not None):
                # The run stopped early: this iteration's leaf got its gradient but may just not
                # have reached the line that uses it (a manual update interrupted by a crash).
                continue
            yield Detection("unused-gradient", t, {"stats": stats})

    def describe(self, d: Detection, event: GuardExit, ctx: RuleContext) -> Finding:
        stats, t = d.facts["stats"], d.subject
        hit = ctx.name_of(t) if t is not None else None
        name = hit.name if hit else assigned_name(stats.site[0], stats.func)
        loc = ctx.loc(stats.site, hit.frame if hit else None)
        subject = Subject(name, "tensor", "", loc, stats.first_iteration)
        count = "once" if stats.count == 1 else f"{stats.count} times"
        fix = "drop requires_grad=True (or build it under torch.no_grad())"
        return self.finding(ctx, subject, ctx.loc(stats.site), fix,
                            {"count": count, "fix": fix, "name": display(name, "A tensor")},
                            message="unused-gradient")
