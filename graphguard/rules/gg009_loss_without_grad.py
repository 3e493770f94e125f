"""GG009 loss-without-grad: backward on a tensor with no grad_fn, and the cuts that explain it."""
from __future__ import annotations


import torch

from ..events import BackwardCall
from ..lookup.source import assignment_lines
from ..model import Finding, Related, SourceLoc
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

    It also fires when the loss requires grad but its graph reaches none of the optimized
    parameters, only tensors made fresh in this iteration: the history was dropped (`.item()`,
    `.data`, numpy, `torch.no_grad()`) and the value re-wrapped (`torch.tensor(v,
    requires_grad=True)`, `Variable(...)`, `loss.requires_grad = True`). Backward then runs and
    training silently learns nothing; the finding names the line that re-enabled requires_grad
    and the cut that dropped the history (`fix-at`).

    ## Known problems
    The re-wrap check runs while the guard records in full (the first iterations) and only for
    `backward()` (not `autograd.grad`, whose inputs may legitimately be fresh tensors).
    Cuts are recorded during full recording only (the first iterations); afterwards the finding
    says the loss has no grad_fn without naming the cut.
    """

    code = "GG009"
    slug = "loss-without-grad"
    severity = "error"
    summary = "backward on a tensor that has no grad_fn, with the ops that cut it"
    template = "{name} {state}: {why}. Fix: {fix}"
    events = (BackwardCall,)

    def check(self, event: BackwardCall, ctx: RuleContext) -> list[Finding] | None:
        out = []
        rewrapped = self._rewrapped(event, ctx)
        if rewrapped is not None:
            return [rewrapped]
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
                                    {"why": why, "fix": fix, "name": display(name, "The loss"),
                                     "state": "does not require grad, so backward() would fail"},
                                    related, graph=graph))
        return out

    def _rewrapped(self, event: BackwardCall, ctx: RuleContext) -> Finding | None:
        """A loss that requires grad but whose graph reaches none of the optimized parameters,
        only tensors made fresh in this iteration: its history was dropped and re-wrapped
        (`torch.tensor(loss.item(), requires_grad=True)`, `loss.requires_grad = True`)."""
        if (event.api != "backward" or not ctx.any_optimized() or not ctx.recording_details()
                or event.scan is None or event.scan.truncated):
            return None
        roots = [r for r in event.roots if isinstance(r, torch.Tensor) and r.requires_grad]
        leaves = list(event.scan.leaves) + [r for r in roots if r.grad_fn is None]  # a root that is a leaf
        if not roots or not leaves or any(ctx.is_optimized(v) for v in leaves):
            return None
        for v in leaves:
            if isinstance(v, torch.nn.Parameter):
                return None
            made = ctx.creation(v)
            if made is not None and made[1] != ctx.iteration:
                return None
        root = roots[0]
        subject = ctx.subject(root)
        name = subject.name
        cuts = [c for c in ctx.all_cuts() if c.iteration == ctx.iteration
                and any(ctx.is_optimized(r()) for r in c.leaves if r() is not None)]
        related: list[Related] = cut_related(ctx, cuts)
        if name and event.site:
            # where the user switched requires_grad back on (`loss.requires_grad = True`): the
            # re-wrap to remove (source read for wording only: the behaviour decided above)
            fr = event.site[0]
            for ln in assignment_lines(fr.file, fr.line, f"{name}.requires_grad"):
                if ln <= fr.line:
                    related.append(Related("fix-at", name, "requires_grad = True",
                                           SourceLoc(fr.file, ln, fr.function), ctx.iteration))
        if cuts and cuts[0].site:
            related.append(Related("fix-at", None, describe_op(cuts[0]), ctx.loc(cuts[0].site),
                                   cuts[0].iteration))
        if cuts:
            c = cuts[0]
            why = (f"it requires grad but its history was dropped by "
                   f"{describe_op(c)} at line {c.site[0].line if c.site else '?'}, so no optimized "
                   "parameter gets a gradient")
        else:
            why = ("it requires grad but its graph reaches none of the optimized parameters, only "
                   "tensors made in this iteration: its history was dropped and re-wrapped")
        fix = ("keep the loss a tensor computed from the model's output (no .item(), .data, "
               "numpy or torch.tensor(...) re-wrap), and drop the requires_grad=True re-wrap")
        starved = [r() for c in cuts for r in c.leaves if r() is not None and ctx.is_optimized(r())]
        graph = cut_snapshot(ctx, cuts, starved or leaves, f"GG009: {name or 'the loss'} is re-wrapped",
                             sink=root, entry_site=event.site)
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"why": why, "fix": fix, "name": display(name, "The loss"),
                             "state": "trains nothing"}, related,
                            graph=graph)
