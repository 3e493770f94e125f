"""GG012 non-scalar-loss: backward from a tensor with more than one element and no gradient given."""
from __future__ import annotations


from typing import Iterator

import torch

from ..events import BackwardCall
from ..lookup.names import NameHit, resolve
from ..lookup.origins import origin_of_name
from ..lookup.returns import backward_receiver, backward_receiver_callee, return_lines
from ..model import Finding, Message, Related, Role, Subject
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

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
    messages = (
        Message("backward", "error",
                "{name} has shape {shape}, so backward() cannot start from it without a gradient; "
                "reduce it first: {fix}",
                "loss.backward() on a tensor of more than one element, with no gradient="),
        Message("autograd-grad", "error",
                "{name} has shape {shape}, so torch.autograd.grad cannot start from it without a "
                "gradient; reduce it first: {fix}",
                "torch.autograd.grad from an output of more than one element, with no grad_outputs="),
    )
    events = (BackwardCall,)
    # quiet: every root is a scalar or has its gradient given
    quiet_skip = (BackwardCall,)

    def detect(self, event: BackwardCall, ev: Evidence) -> Iterator[Detection]:
        for i, root in enumerate(event.roots):
            if not isinstance(root, torch.Tensor) or not root.requires_grad:
                continue  # a root without grad is GG009's
            given = event.gradients[i] if i < len(event.gradients) else None
            if given is not None or root.numel() == 1:
                continue
            yield Detection("autograd-grad" if event.api == "grad" else "backward", root)

    def describe(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        root = d.subject
        subject = ctx.subject(root, hit=self._receiver(event, root))
        related = self._where_made(ctx, event, root, subject)
        if subject.name is None and related and related[0].role is Role.MADE_AT:
            # `self.criterion_rank(a, b, y).backward()`: the callable is what the user wrote
            # (made where it is built, when no op of the loss was recorded)
            built = related.pop(0)
            subject = Subject(built.name, "call", subject.summary,
                              subject.created_at or built.location, subject.created_in_iteration)
            related = [Related(r.role, r.name or built.name, r.op, r.location, r.iteration) for r in related]
        name = subject.name
        shape = f"[{', '.join(str(s) for s in root.shape)}]"
        base = f"{name}(...)" if subject.kind == "call" else name or "the loss"
        if d.message == "autograd-grad":
            fix = (f"torch.autograd.grad({base}.sum(), ...), or pass "
                   f"grad_outputs=torch.ones_like({base})")
        else:
            fix = (f"{base}.mean().backward() (or .sum()), or pass "
                   f"gradient=torch.ones_like({base}) to weight every element")
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"shape": shape, "fix": fix,
                             "name": display(base if subject.kind == "call" else name, "The loss")},
                            related, message=d.message)

    @staticmethod
    def _receiver(event: BackwardCall, root: torch.Tensor) -> NameHit | None:
        """The loss as the backward line writes it (`l` in `l.backward()`), when that name holds
        this root: the name the user reads on the failing line, rather than another name of the
        same tensor (`output['loss']`, the dict it was taken from)."""
        frame = event.site[0] if event.site else None
        text = backward_receiver(frame) if frame is not None else None
        hit = resolve(text) if text else None
        return hit if hit is not None and hit.value is root else None

    @staticmethod
    def _where_made(ctx: RuleContext, event: BackwardCall, root: torch.Tensor,
                    subject: Subject) -> list[Related]:
        """`fix-at` the line that computed the unreduced value: where the loss was made inside
        the forward or helper that returned it (`loss = start_loss + end_loss`), else the
        `return` of the loss callable the backward line calls (`self.criterion_rank(...)`),
        with that callable's construction line."""
        out: list[Related] = []
        made = ctx.creation(root)
        if made is not None and made[0]:
            inner = ctx.loc(made[0][:1])
            if inner is not None:
                out += ctx.fix_at(inner, subject.name, "reduce to a scalar (.mean() / .sum())")
        frame = event.site[0] if event.site else None
        callee = backward_receiver_callee(frame) if frame is not None and subject.name is None else None
        if callee is None:
            return out
        hit = resolve(callee, ctx.frames())
        found: list[Related] = []  # "made-at" is popped by `describe`: it never reaches the report
        if hit is not None:
            returns = return_lines(hit.value)
            if returns and not out:
                found += ctx.fix_at(returns[-1], callee, "reduce to a scalar (.mean() / .sum())")
            try:
                built = origin_of_name(callee, hit.frame, None)
            except Exception:  # wording only
                built = None
            found.append(Related(Role.MADE_AT, callee, "loss callable", built))
        # the callable's building line first (the subject's name and creation line), then the fixes
        return ([r for r in found if r.role is Role.MADE_AT] + [r for r in found if r.role is not Role.MADE_AT]
                + out)
