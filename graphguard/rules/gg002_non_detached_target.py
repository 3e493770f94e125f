"""GG002 non-detached-target: a loss function gets a target that carries autograd history."""
from __future__ import annotations


import torch

from ..capture.graph import leaf_of, walk
from .shared.snapshot import call_node, snapshot_from_tensors
from ..events import LossCall
from ..model import Finding, Related
from .shared.cuts import leaf_label
from .base import Rule, display
from .context import RuleContext

__all__ = ["NonDetachedTarget"]


class NonDetachedTarget(Rule):
    """## What it does
    Checks every call of a loss function (`F.mse_loss`, `nn.MSELoss`, `F.cross_entropy`,
    `F.binary_cross_entropy*`, `F.kl_div`, `F.nll_loss`, ...) and fires when the target requires
    grad while the prediction does too.

    ## Why is this bad?
    A target is a constant to fit. With history, the backward also runs into the target's graph:
    it fails from the second iteration on when that graph was built once ("backward through the
    graph a second time"), wastes time and memory otherwise, and pushes the target toward the
    prediction when the target's graph reaches trained parameters (a DQN target not detached).

    ## Example
    ```python
    ref = make_reference(torch.zeros(8, requires_grad=True))
    loss = F.mse_loss(pred, ref)
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        ref = make_reference(torch.zeros(8))
    loss = F.mse_loss(pred, ref)          # or F.mse_loss(pred, ref.detach())
    ```

    ## Known problems
    When the prediction does not require grad and the target does (VQ-VAE's commitment loss
    `F.mse_loss(quantized.detach(), z)`), the roles are swapped on purpose and the rule stays quiet.
    """

    code = "GG002"
    slug = "non-detached-target"
    severity = "error"
    summary = "a loss function receives a target that requires grad"
    template = ("{name} is the target of {func} but requires grad ({leaves}); targets must be "
                "constants. Fix: {fix}")
    events = (LossCall,)

    def check(self, event: LossCall, ctx: RuleContext) -> list[Finding] | None:
        t, x = event.target, event.input
        if not (isinstance(t, torch.Tensor) and t.requires_grad):
            return None
        # Swapped roles on purpose (the prediction is detached): see Known problems.
        if not (isinstance(x, torch.Tensor) and x.requires_grad):
            return None
        subject = ctx.subject(t)
        name = subject.name
        related = []
        labels = []
        leaves = [t] if t.grad_fn is None else [v for v in (leaf_of(n) for n in walk([t.grad_fn], 2000).nodes) if v is not None]
        for leaf in leaves[:4]:
            label = leaf_label(ctx, leaf)
            made = ctx.creation(leaf)
            related.append(Related("from-leaf", label, None, ctx.loc(made[0]) if made else None))
            labels.append(label or (f"a requires-grad tensor made at line {made[0][0].line}" if made and made[0] else "a requires-grad leaf"))
        fix = (f"pass {name}.detach() as the target, or build {name} under torch.no_grad()" if name
               else "pass target.detach(), or build the target under torch.no_grad()")
        related += ctx.fix_at(subject.created_at or ctx.loc(event.site), name, "detach")
        return [self.finding(ctx, subject, ctx.loc(event.site), fix,
                             {"func": event.func, "leaves": "from " + ", ".join(labels) if labels else "it has history",
                              "fix": fix, "name": display(name, "The target")}, related,
                             graph=snapshot_from_tensors(
                                 [x, t], ctx.stamp_key, highlight={1: ["target"]},
                                 labels={1: name} if name else None, creation=ctx.creation,
                                 entry=call_node("entry", f"{event.func}()", ctx.loc(event.site), ctx.iteration),
                                 title=f"GG002: {name or 'the target'} requires grad"))]
