"""GG103 needless-requires-grad: a leaf made with requires_grad=True whose gradient nobody uses."""
from __future__ import annotations


from .context import RuleContext, assigned_name
from ..events import GuardExit
from ..model import Finding, Subject
from .base import Rule, display

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
    template = "{name} is created with requires_grad=True ({count}) but its gradient is never used. Fix: {fix}"
    events = (GuardExit,)

    def check(self, event: GuardExit, ctx: RuleContext) -> list[Finding] | None:
        live = {}
        for t, rec in ctx.recorded_leaves():
            live.setdefault(id(rec.stats), t)
        out = []
        for stats in ctx.leaf_sites():
            if stats.used or not stats.site or ctx.superseded(self, leaf_site=stats):
                continue
            t = live.get(id(stats))
            if (event.exc is not None and stats.first_iteration >= ctx.iteration
                    and t is not None and t.grad is not None):
                # The run stopped early: this iteration's leaf got its gradient but may just not
                # have reached the line that uses it (a manual update interrupted by a crash).
                continue
            hit = ctx.name_of(t) if t is not None else None
            name = hit.name if hit else assigned_name(stats.site[0], stats.func)
            loc = ctx.loc(stats.site, hit.frame if hit else None)
            subject = Subject(name, "tensor", "", loc, stats.first_iteration)
            count = "once" if stats.count == 1 else f"{stats.count} times"
            fix = "drop requires_grad=True (or build it under torch.no_grad())"
            out.append(self.finding(ctx, subject, ctx.loc(stats.site), fix,
                                    {"count": count, "fix": fix, "name": display(name, "A tensor")}))
        return out
