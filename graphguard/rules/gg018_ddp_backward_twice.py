"""GG018 ddp-backward-twice: a second backward through one DDP forward (its gradients are never all-reduced)."""
from __future__ import annotations

import weakref
from typing import Iterator

from ..capture.ddp import DdpWindow
from ..events import BackwardCall, BackwardDone
from ..model import Finding, Message, Related, Role, Site, Subject
from .base import Detection, Rule
from .context import Evidence, RuleContext
from .shared.ddp import ddp_name, describe_indices, group_related, group_subject

__all__ = ["DdpBackwardTwice"]


class DdpBackwardTwice(Rule):
    """## What it does
    Before a `backward()` runs, walks its graph to the parameters it will give gradients to. When
    some of them belong to a `DistributedDataParallel` module whose reducer already received their
    gradients since the module's last forward (an earlier backward through the same forward), it
    reports the parameters, both backward lines and the forward.

    ## Why is this bad?
    DDP all-reduces each parameter's gradient once per forward: when the first backward has
    delivered them all, the reduction is finished and the averaged gradients are in `.grad`. A
    second backward through the same forward (`l1.backward(retain_graph=True)` then
    `l2.backward()`) adds each rank's *local* gradients on top, never averaged: the ranks step on
    different gradients and their replicas drift apart, silently (torch 2.13, with or without
    `find_unused_parameters` or `static_graph`). Older releases, and some configurations, raise
    "Expected to mark a variable ready only once" instead.

    ## Example
    ```python
    out = model(x)                  # model = DDP(net)
    l1.backward(retain_graph=True)
    l2.backward()                   # never all-reduced
    ```

    ## Use instead
    ```python
    (l1 + l2).backward()            # one backward per forward
    # or a forward for each backward, each inside its own iteration
    ```

    ## Known problems
    `torch.autograd.grad` (gradient penalties, MAML's inner step) writes no `.grad` and is never
    counted. Forwards inside `no_sync()` are exempt: nothing is reduced there.
    """

    code = "GG018"
    slug = "ddp-backward-twice"
    severity = "error"
    summary = "a second backward through one DistributedDataParallel forward: its gradients are never all-reduced"
    messages = (
        Message("second-backward", "error",
                "this backward reaches {params}, which already received their gradients from the "
                "backward at line {first_line} through {model}'s forward at line {forward_line}; "
                "DistributedDataParallel all-reduces once per forward, so these gradients stay "
                "local to each rank and the replicas drift apart; {fix}",
                "a backward reaches parameters of a DDP module that an earlier backward through "
                "the same forward already gave gradients: they are never all-reduced"),
    )
    events = (BackwardCall, BackwardDone)

    def __init__(self) -> None:
        # the first backward that gave each window gradients (kept across events, weakly: a
        # window goes with its module)
        self.first: "weakref.WeakKeyDictionary[DdpWindow, Site]" = weakref.WeakKeyDictionary()

    def detect(self, event: BackwardCall | BackwardDone, ev: Evidence) -> Iterator[Detection]:
        windows = [w for w in ev.ddp_windows() if w.sync]
        if not windows:
            return
        if isinstance(event, BackwardDone):
            for w in windows:
                if w.reached():
                    self.first.setdefault(w, event.call.site)
            return
        if event.api != "backward" or event.scan is None:
            return  # autograd.grad writes no .grad: the reducer never sees it
        reaches = {id(t) for t in event.scan.leaves}
        if event.inputs:
            reaches &= {id(t) for t in event.inputs}
        for w in windows:
            again = sorted(i for i in w.reached() if id(w.param(i)) in reaches)
            if again:
                yield Detection("second-backward", w, {"again": again, "first": self.first.get(w)})

    def describe(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        w: DdpWindow = d.subject
        again: list[int] = d.facts["again"]
        owner = ddp_name(ctx, w)
        model = owner or "the DDP module"
        if len(again) == len(w.names):  # every parameter: the module itself is the subject
            module = w.module()
            subject = Subject(owner, "module", type(getattr(module, "module", module)).__name__,
                              ctx.origin(module, ctx.name_of(module)) if module is not None else None)
        else:
            subject = group_subject(ctx, w, again, owner)
        forward_at = ctx.loc(w.site)
        first = d.facts["first"]
        first_at = ctx.loc(first) if first is not None else None
        related: list[Related] = [Related(Role.FORWARD_AT, model, "forward", forward_at, w.iteration)]
        fix = "sum the losses and call backward once, or run a forward for each backward"
        if first_at is not None:
            related.append(Related(Role.BACKWARD_AT, None, "first backward", first_at, w.iteration))
            related += ctx.fix_at(first_at, None, "one backward of the summed losses")
        related += group_related(ctx, w, again, owner)
        args = {"params": describe_indices(w, again, owner), "model": f"`{model}`" if owner else model,
                "first_line": first_at.line if first_at else "?",
                "forward_line": forward_at.line if forward_at else "?", "fix": fix}
        return self.finding(ctx, subject, ctx.loc(event.site), fix, args, related,
                            message="second-backward")
