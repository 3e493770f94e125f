"""GG008 param-without-grad: an optimizer steps a parameter that got no gradient, and why."""
from __future__ import annotations


from ..events import StepCall
from ..model import Finding
from .shared.cuts import cut_related, cut_snapshot, describe_op, fix_for_cut
from .base import Rule, display
from .context import RuleContext

__all__ = ["ParamWithoutGrad"]


class ParamWithoutGrad(Rule):
    """## What it does
    At `optimizer.step()`, finds parameters the optimizer holds whose `.grad` is still `None`
    although the guard saw their path to the loss cut: a comparison, `argmax`, `round`,
    `torch.where` on a bool mask, `.detach()`, `.item()`, a `torch.tensor(...)` copy, or a
    `torch.no_grad()` region. It names the parameter and the op and line that cut it.

    ## Why is this bad?
    Nothing crashes, the loss is computed, the optimizer steps, and the parameter never moves.
    Training "runs" and silently learns nothing for that parameter.

    ## Example
    ```python
    mask = torch.where(dist < radius, 1.0, 0.0)    # comparison: no gradient to radius
    loss = ((image * mask - ref) ** 2).mean()
    loss.backward(); opt.step()                     # radius.grad is None
    ```

    ## Use instead
    ```python
    mask = torch.sigmoid(10 * (radius - dist))      # a soft, differentiable mask
    ```

    ## Known problems
    Parameters that are simply unused by the forward pass (no cut seen) are not reported here.
    """

    code = "GG008"
    slug = "param-without-grad"
    severity = "error"
    summary = "an optimized parameter got no gradient: its path to the loss was cut"
    template = ("{name} is optimized but received no gradient: its path to the loss is cut by "
                "{op} at line {line}. Fix: {fix}")
    events = (StepCall,)

    def __init__(self) -> None:
        # First iteration since the previous step. Gradient accumulation runs several backward
        # calls per step and, before the first step, each one closes an iteration (no optimizer
        # seen yet), so the cut may be an iteration older than the step that shows its effect.
        self.window_start = 0

    def check(self, event: StepCall, ctx: RuleContext) -> list[Finding] | None:
        start, self.window_start = self.window_start, ctx.iteration + 1
        out = []
        for group in event.optimizer.param_groups:
            for p in group["params"]:
                if not p.requires_grad or p.grad is not None:
                    continue
                cuts = [c for c in ctx.cuts_for_leaf(p) if c.iteration >= start]
                if not cuts:
                    continue
                subject = ctx.subject(p, kind="parameter")
                name = subject.name
                first = cuts[0]
                fix = fix_for_cut(first, name or "the parameter")
                out.append(self.finding(
                    ctx, subject, ctx.loc(event.site), fix,
                    {"op": describe_op(first), "line": first.site[0].line if first.site else "?",
                     "fix": fix, "name": display(name, "A parameter")},
                    cut_related(ctx, cuts),
                    graph=cut_snapshot(ctx, cuts, [p], f"GG008: {name or 'parameter'} gets no gradient",
                                       entry_site=event.site, entry_op="optimizer.step()")))
        return out
