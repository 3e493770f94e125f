"""GG009 loss-without-grad: backward on a tensor with no grad_fn, and the cuts that explain it."""
from __future__ import annotations


import torch

from ..events import BackwardCall
from ..model import Finding, Related
from .shared.cuts import cut_related, cut_snapshot, describe_op, fix_for_cut, leaf_label
from .base import Rule, display
from .context import RuleContext

__all__ = ["LossWithoutGrad"]


class LossWithoutGrad(Rule):
    """## What it does
    Before `backward()`, checks that the tensor it starts from has a `grad_fn`. When it has none,
    it explains why from what it recorded: the ops that cut the path between the requires-grad
    leaves (the parameters) and the loss, with their lines, or a `torch.no_grad()` region.

    ## Why is this bad?
    PyTorch raises "element 0 of tensors does not require grad and does not have a grad_fn",
    which says nothing about where the gradient was lost.

    ## Example
    ```python
    mask = torch.where((0.9 < r) & (r < 1), 1.0, 0.0)   # comparisons cut the gradient
    loss = F.mse_loss(mask, ref)
    loss.backward()
    ```

    ## Use instead
    ```python
    mask = torch.sigmoid(k * (r - 0.9)) * torch.sigmoid(k * (1 - r))
    ```

    ## Known problems
    Cuts are recorded during full recording only (the first iterations); afterwards the finding
    says the loss has no grad_fn without naming the cut.
    """

    code = "GG009"
    slug = "loss-without-grad"
    severity = "error"
    summary = "backward on a tensor that has no grad_fn, with the ops that cut it"
    template = "{name} does not require grad, so backward() would fail: {why}. Fix: {fix}"
    events = (BackwardCall,)

    def check(self, event: BackwardCall, ctx: RuleContext) -> list[Finding] | None:
        out = []
        for root in event.roots:
            if not isinstance(root, torch.Tensor) or root.requires_grad:
                continue
            subject = ctx.subject(root)
            name = subject.name
            cuts = ctx.cuts_behind(root)
            if not cuts:
                # The value went through Python (`.item()`, `float(...)`) and lost its taint: the
                # cuts of this iteration on optimized parameters are the best explanation left.
                cuts = [c for c in ctx.all_cuts() if c.iteration == ctx.iteration
                        and not c.no_grad and any(ctx.is_optimized(r()) for r in c.leaves if r() is not None)]
            related: list[Related] = cut_related(ctx, cuts)
            leaves = []
            seen: set[int] = set()
            for c in cuts:
                for r in c.leaves:
                    v = r()
                    if v is not None and id(v) not in seen:
                        seen.add(id(v))
                        leaves.append(v)
            names = []
            leaves.sort(key=lambda v: not ctx.is_optimized(v))  # optimized parameters first
            for leaf in leaves[:4]:
                label = leaf_label(ctx, leaf)
                made = ctx.creation(leaf)
                related.append(Related("unreachable", label, None, ctx.loc(made[0]) if made else None))
                if label:
                    names.append(label)
            if cuts:
                c = cuts[0]
                who = ", ".join(names) if names else "the requires-grad tensors"
                why = (f"the path from {who} to it is cut by {describe_op(c)} at line "
                       f"{c.site[0].line if c.site else '?'}")
                fix = fix_for_cut(c, names[0] if names else "the parameters")
            elif not torch.is_grad_enabled():
                why = "it was computed under torch.no_grad()"
                fix = "compute the loss outside torch.no_grad()"
            else:
                why = "nothing it was computed from requires grad"
                fix = ("make sure the model's parameters require grad and the loss is computed "
                       "from the model's output, not from .item() or a new tensor")
            # the fix goes where the history is dropped (the first cut), else where the loss is made
            related += ctx.fix_at(ctx.loc(cuts[0].site) if cuts and cuts[0].site else subject.created_at,
                                  None, describe_op(cuts[0]) if cuts else None)
            graph = cut_snapshot(ctx, cuts, leaves, f"GG009: {name or 'the loss'} has no grad_fn",
                                 sink=root, entry_site=event.site, entry_op=f"{event.api}()")
            out.append(self.finding(ctx, subject, ctx.loc(event.site), fix,
                                    {"why": why, "fix": fix, "name": display(name, "The loss")},
                                    related, graph=graph))
        return out
