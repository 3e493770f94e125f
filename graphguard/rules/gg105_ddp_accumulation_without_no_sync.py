"""GG105 ddp-accumulation-without-no-sync: gradient accumulation under DDP that all-reduces every micro-step."""
from __future__ import annotations

from typing import Iterator

from ..capture.ddp import DdpWindow
from ..events import StepCall
from ..model import Finding, Message, Related, Role
from .base import Detection, Rule
from .context import Evidence, RuleContext
from .shared.ddp import ddp_name, module_subject, optimizes

__all__ = ["DdpAccumulationWithoutNoSync"]


class DdpAccumulationWithoutNoSync(Rule):
    """## What it does
    At each optimizer step, counts the forwards of every `DistributedDataParallel` module the
    optimizer holds whose backward gave gradients since the previous step, outside `no_sync()`.
    Two or more mean that the gradients were accumulated and all-reduced at every micro-step; it
    reports the step, the forward and how many all-reductions one would have done.

    ## Why is this bad?
    The result is right: all-reducing each micro-batch's gradient and adding them up gives the
    same sum as all-reducing once at the end. But every micro-step pays a full all-reduce of the
    model's gradients: with 8 micro-batches, 8 times the communication, which on a real cluster
    is often the step's largest cost.

    ## Example
    ```python
    for x in micro_batches:                # model = DDP(net)
        model(x).mean().backward()         # all-reduces every time
    opt.step()
    ```

    ## Use instead
    ```python
    for i, x in enumerate(micro_batches):
        last = i == len(micro_batches) - 1
        with (nullcontext() if last else model.no_sync()):
            model(x).mean().backward()
    opt.step()
    ```

    ## Known problems
    The micro-steps before the first optimizer step may be counted as separate iterations and not
    reported. A GAN's discriminator trained on a real and a fake batch with a backward each is
    reported too; the same `no_sync()` (or one backward of the summed losses) applies.
    """

    code = "GG105"
    slug = "ddp-accumulation-without-no-sync"
    severity = "warning"
    summary = "gradient accumulation under DDP without no_sync(): every micro-step all-reduces the gradients"
    messages = (
        Message("reduced-every-micro-step", "warning",
                "{model} gave gradients from {count} forwards outside no_sync() since the last step "
                "(the latest at line {forward_line}), so they were all-reduced {count} times where "
                "once would do; the result is right, the communication is {count}x; {fix}",
                "two or more synced DDP forwards gave gradients before one optimizer step: each "
                "micro-step paid a full all-reduce"),
    )
    events = (StepCall,)
    skim_skip = (StepCall,)

    def detect(self, event: StepCall, ev: Evidence) -> Iterator[Detection]:
        for windows in ev.ddp_reduced_windows():
            if len(windows) < 2 or not optimizes(event.optimizer, windows[-1]):
                continue
            yield Detection("reduced-every-micro-step", windows[-1], {"windows": windows})

    def describe(self, d: Detection, event: StepCall, ctx: RuleContext) -> Finding:
        windows: list[DdpWindow] = d.facts["windows"]
        w: DdpWindow = d.subject
        owner = ddp_name(ctx, w)
        model = f"`{owner}`" if owner else "the DDP module"
        first_at, forward_at = ctx.loc(windows[0].site), ctx.loc(w.site)
        fix = "run every micro-step but the last inside model.no_sync()"
        related = [Related(Role.FORWARD_AT, owner, "forward", forward_at, w.iteration)]
        related += ctx.fix_at(first_at, owner, "with model.no_sync(): for all but the last micro-step")
        args = {"model": model, "count": len(windows), "forward_line": forward_at.line if forward_at else "?",
                "fix": fix}
        return self.finding(ctx, module_subject(ctx, w, owner), ctx.loc(event.site), fix, args, related,
                            message="reduced-every-micro-step")
