"""GG012 non-scalar-loss: backward from a tensor with more than one element and no gradient given."""
from __future__ import annotations


import torch

from ..events import BackwardCall
from ..model import Finding
from .base import Rule, display
from .context import RuleContext

__all__ = ["NonScalarLoss"]


class NonScalarLoss(Rule):
    """## What it does
    Before `backward()` (or `torch.autograd.grad`) runs, checks every tensor it starts from: one
    that requires grad, has more than one element, and comes without a `gradient=` (or
    `grad_outputs=`) is reported with its name and shape.

    ## Why is this bad?
    PyTorch can only invent the starting gradient (1.0) for a single number. For anything
    bigger it raises "grad can be implicitly created only for scalar outputs", which names
    neither the tensor nor its shape. The usual cause is a loss left unreduced:
    `reduction="none"`, a per-sample loss, or `(pred - y) ** 2` without `.mean()`.

    ## Example
    ```python
    loss = F.mse_loss(pred, y, reduction="none")   # shape [batch, 1]
    loss.backward()
    ```

    ## Use instead
    ```python
    loss = F.mse_loss(pred, y, reduction="none").mean()
    loss.backward()
    # or, when the weighting per element is meant: loss.backward(gradient=weights)
    ```

    ## Known problems
    None known: the check is the one PyTorch makes, done earlier and with the variable's name.
    """

    code = "GG012"
    slug = "non-scalar-loss"
    severity = "error"
    summary = "backward on a tensor with more than one element and no gradient argument"
    template = ("{name} has shape {shape}, so {call} cannot start from it without a gradient; "
                "reduce it first: {fix}")
    events = (BackwardCall,)

    def check(self, event: BackwardCall, ctx: RuleContext) -> list[Finding] | None:
        out = []
        for i, root in enumerate(event.roots):
            if not isinstance(root, torch.Tensor) or not root.requires_grad:
                continue  # a root without grad is GG009's
            given = event.gradients[i] if i < len(event.gradients) else None
            if given is not None or root.numel() == 1:
                continue
            subject = ctx.subject(root)
            name = subject.name
            shape = f"[{', '.join(str(s) for s in root.shape)}]"
            base = name or "the loss"
            if event.api == "grad":
                call = "torch.autograd.grad"
                fix = (f"torch.autograd.grad({base}.sum(), ...), or pass "
                       f"grad_outputs=torch.ones_like({base})")
            else:
                call = "backward()"
                fix = (f"{base}.mean().backward() (or .sum()), or pass "
                       f"gradient=torch.ones_like({base}) to weight every element")
            out.append(self.finding(ctx, subject, ctx.loc(event.site), fix,
                                    {"shape": shape, "call": call, "fix": fix,
                                     "name": display(name, "The loss")}))
        return out
