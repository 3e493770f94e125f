"""GG017 ddp-unused-parameter: a DDP module's forward left parameters without a gradient."""
from __future__ import annotations

import linecache
import weakref
from typing import Any, Iterator

from ..capture.ddp import DdpWindow
from ..capture.sites import is_internal_file
from ..events import BackwardDone, DdpForward
from ..model import Finding, Message, Related, Role, Site, SourceLoc
from .base import Detection, Rule
from .context import Evidence, RuleContext
from .shared.ddp import ddp_name, describe_indices, group_related, group_subject

__all__ = ["DdpUnusedParameter"]


class DdpUnusedParameter(Rule):
    """## What it does
    Counts, for every `DistributedDataParallel` module, the gradients each of its parameters
    receives between one forward and the next (a grad hook per parameter: what DDP's reducer
    counts). When a backward gave some of them a gradient and others none, the next forward of
    that module is stopped before DDP's own check, with the parameters named as the program
    writes them (`model.module.aux_head`), the line that built their layer, the forward whose
    output left them out and the backward that gave them nothing.

    ## Why is this bad?
    DDP all-reduces gradients bucket by bucket and waits for every parameter's. A layer the
    forward never calls (an auxiliary head, a branch taken on some batches only) leaves the
    reduction unfinished, and the next iteration fails with "Expected to have finished
    reduction in the prior iteration before starting a new one ... Parameter indices which did
    not receive grad for rank 0: 4 5": indices, no names, no line, on every rank.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            ...
            self.aux_head = nn.Linear(16, 4)   # never called in forward
    model = DDP(Net())
    loss = F.cross_entropy(model(x), y)
    loss.backward()                            # next forward: DDP raises
    ```

    ## Use instead
    ```python
    # call it (its loss term joins the total), or drop it, or freeze it:
    model.module.aux_head.requires_grad_(False)
    # or, when parameters really go unused on some iterations:
    model = DDP(Net(), find_unused_parameters=True)   # costs a graph walk per iteration
    ```

    ## Known problems
    Judged at the module's next forward (where DDP would fail) from the gradients that
    arrived, so a program that ends after its first backward is not told. Modules built with
    `find_unused_parameters=True` or `static_graph=True`, and forwards inside `no_sync()` or
    without grad, are exempt, as in DDP.
    """

    code = "GG017"
    slug = "ddp-unused-parameter"
    severity = "error"
    summary = "a DistributedDataParallel forward leaves parameters without a gradient (DDP's unfinished reduction)"
    messages = (
        Message("unused-parameters", "error",
                "{params} received no gradient from the backward of {model}'s forward at line "
                "{forward_line}; DistributedDataParallel waits for every parameter's gradient, so "
                "this forward fails with DDP's \"Expected to have finished reduction\" error; {fix}",
                "a DDP module's backward gave some of its parameters a gradient and others none: "
                "its next forward fails with DDP's unfinished reduction"),
    )
    events = (DdpForward, BackwardDone)

    def __init__(self) -> None:
        # the first backward that reached each window: where the parameters were left out. Kept
        # across events (a window is judged at the module's next forward), weakly: a window
        # goes with its module
        self.backward_at: "weakref.WeakKeyDictionary[DdpWindow, Site]" = weakref.WeakKeyDictionary()

    def detect(self, event: DdpForward | BackwardDone, ev: Evidence) -> Iterator[Detection]:
        if isinstance(event, BackwardDone):
            for w in ev.ddp_windows():
                if w.expects and w.reached():
                    self.backward_at.setdefault(w, event.call.site)  # the first one that reached it
            return
        w = event.window
        if w is None or not w.expects:
            return  # no forward before, grad off, no_sync(), find_unused_parameters, static_graph
        missing = w.missing()
        if not w.reached() or not missing:  # a clean iteration, or one whose backward never ran
            return
        yield Detection("unused-parameters", w, {"missing": missing, "backward": self.backward_at.get(w)})

    def describe(self, d: Detection, event: DdpForward, ctx: RuleContext) -> Finding:
        w: DdpWindow = d.subject
        missing: list[int] = d.facts["missing"]
        owner = ddp_name(ctx, w)
        subject = group_subject(ctx, w, missing, owner)
        model = owner or "the DDP module"
        forward_at = ctx.loc(w.site)
        related: list[Related] = [Related(Role.FORWARD_AT, model, "forward", forward_at, w.iteration)]
        backward = d.facts["backward"]
        if backward is not None:
            related.append(Related(Role.BACKWARD_AT, None, "backward", ctx.loc(backward), w.iteration))
        related += group_related(ctx, w, missing, owner)
        inner_forward = _inner_forward(w)
        fix = ("call the layer in forward so the loss uses it, leave it out of the model (or "
               "requires_grad_(False) on it), or build DDP with find_unused_parameters=True (a graph "
               "walk every iteration)")
        if inner_forward is not None:
            related += ctx.fix_at(inner_forward, subject.name, "use the layer in forward, or remove it")
        module = w.module()
        hit = ctx.name_of(module) if module is not None else None
        built = ctx.origin(module, hit) if hit is not None else None
        if built is not None:
            related += ctx.fix_at(built, owner, "or DDP(..., find_unused_parameters=True)")
        args = {"params": describe_indices(w, missing, owner), "model": f"`{model}`" if owner else model,
                "forward_line": forward_at.line if forward_at else "?", "fix": fix,
                "indices": " ".join(str(i) for i in missing)}
        return self.finding(ctx, subject, ctx.loc(event.site), fix, args, related,
                            message="unused-parameters")


def _inner_forward(w: DdpWindow) -> SourceLoc | None:
    """The `def forward` of the module DDP wraps: where a layer the forward leaves out is called.
    Wording only (a fix-at line), so it may read the source."""
    module = w.module()
    inner = getattr(module, "module", None)
    fn = getattr(type(inner), "forward", None)
    code = getattr(fn, "__code__", None)
    if code is None or is_internal_file(code.co_filename):
        return None  # a trainer's wrapper (Lightning's): not where the user's fix goes
    return SourceLoc(code.co_filename, code.co_firstlineno, "forward",
                     linecache.getline(code.co_filename, code.co_firstlineno).strip())
