"""GG020 no-sync-never-reduced: an optimizer steps on gradients that no_sync() kept local to each rank."""
from __future__ import annotations

from typing import Iterator

from ..capture.ddp import DdpWindow
from ..events import StepCall
from ..model import Finding, Message, Related, Role
from .base import Detection, Rule
from .context import Evidence, RuleContext
from .shared.ddp import ddp_name, module_subject, optimizes

__all__ = ["NoSyncNeverReduced"]


class NoSyncNeverReduced(Rule):
    """## What it does
    At each optimizer step, looks at the latest forward of every `DistributedDataParallel` module
    the optimizer holds parameters of. When that forward ran inside `model.no_sync()` and its
    backward gave the parameters gradients, with no collective call of this rank since (a
    hand-written `dist.all_reduce` of the gradients), it reports the step, the module and the
    forward.

    ## Why is this bad?
    `no_sync()` tells DDP to keep this backward's gradients local: they are all-reduced, together
    with everything accumulated before, by the first backward of a forward *outside* it. When
    every micro-step of an accumulation loop is inside (`with model.no_sync():` around the whole
    loop), nothing is ever reduced: each rank steps on its own gradients and the replicas drift
    apart, with no error.

    ## Example
    ```python
    with model.no_sync():                  # model = DDP(net)
        for x in micro_batches:
            model(x).mean().backward()
    opt.step()                             # local gradients
    ```

    ## Use instead
    ```python
    for i, x in enumerate(micro_batches):
        last = i == len(micro_batches) - 1
        with (nullcontext() if last else model.no_sync()):
            model(x).mean().backward()     # the last one all-reduces the sum
    opt.step()
    ```

    ## Known problems
    Any collective call after the backward counts as a hand-written reduction, whatever it
    reduces. With a single rank nothing differs numerically, and it is still reported: the same
    program on more ranks drifts.
    """

    code = "GG020"
    slug = "no-sync-never-reduced"
    severity = "error"
    summary = "an optimizer steps on gradients that DDP's no_sync() kept local to each rank: they are never all-reduced"
    messages = (
        Message("local-gradients", "error",
                "this step uses the gradients of {model} from the backward of its forward at line "
                "{forward_line}, which ran inside no_sync(): they were never all-reduced, so every "
                "rank steps on its own gradients and the replicas drift apart; {fix}",
                "an optimizer steps on gradients of a DDP module whose latest forward ran inside "
                "no_sync(), with no all-reduce since"),
    )
    events = (StepCall,)
    # a step-level check of silent misuse: a misuse repeated every step is seen at a judged one
    skim_skip = (StepCall,)

    def detect(self, event: StepCall, ev: Evidence) -> Iterator[Detection]:
        for w in ev.ddp_windows():
            if w.sync or not w.reached() or not optimizes(event.optimizer, w):
                continue
            if ev.collective_calls() > w.calls_at_grad:
                continue  # the program reduced by hand after the backward
            yield Detection("local-gradients", w)

    def describe(self, d: Detection, event: StepCall, ctx: RuleContext) -> Finding:
        w: DdpWindow = d.subject
        owner = ddp_name(ctx, w)
        model = f"`{owner}`" if owner else "the DDP module"
        forward_at = ctx.loc(w.site)
        fix = "run the last micro-batch's forward and backward outside no_sync(), which all-reduces the accumulated sum"
        related = [Related(Role.FORWARD_AT, owner, "forward inside no_sync()", forward_at, w.iteration)]
        related += ctx.fix_at(forward_at, owner, "the last micro-batch outside no_sync()")
        args = {"model": model, "forward_line": forward_at.line if forward_at else "?", "fix": fix}
        return self.finding(ctx, module_subject(ctx, w, owner), ctx.loc(event.site), fix, args, related,
                            message="local-gradients")
