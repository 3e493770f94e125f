"""GG104 copy-construct-detach: torch.tensor(...) built from tensors that require grad."""
from __future__ import annotations


from ..events import CopyConstruct
from ..model import Finding, Related
from .base import Rule, display
from .context import RuleContext

__all__ = ["CopyConstructDetach"]


class CopyConstructDetach(Rule):
    """## What it does
    Fires when `torch.tensor(...)`, `torch.as_tensor(...)` or `.new_tensor(...)` is built from
    tensors that require grad (also inside a list: `torch.tensor([a[0], a[1]])`).

    ## Why is this bad?
    The copy has no history: gradients stop there, silently. With `requires_grad=True` on the
    copy it looks trainable but is cut off from what it was made of.

    ## Example
    ```python
    pos = torch.tensor([center[0], center[1], 0.0], requires_grad=True)
    ```

    ## Use instead
    ```python
    pos = torch.stack([center[0], center[1], torch.zeros(())])   # keeps the graph
    pos = center.detach().clone()                               # or: a new leaf, on purpose
    ```

    ## Known problems
    A copy made on purpose to get a new leaf is reported too; write `.detach().clone()` to say so.
    """

    code = "GG104"
    slug = "copy-construct-detach"
    severity = "warning"
    summary = "torch.tensor(...) and friends built from tensors that require grad drop their history"
    template = "{func}(...) copies {name}, which requires grad: the copy has no history. Fix: {fix}"
    events = (CopyConstruct,)

    def check(self, event: CopyConstruct, ctx: RuleContext) -> list[Finding] | None:
        hits = []
        for s in event.sources:
            hit = ctx.name_of(s)
            if hit is None and s._base is not None:
                hit = ctx.name_of(s._base)
            if hit is not None and all(h.name != hit.name for h in hits):
                hits.append(hit)
        subject = ctx.subject(hits[0].value if hits else event.sources[0], hit=hits[0] if hits else None)
        name = subject.name
        fix = ("use torch.stack([...]) to keep the graph, or .detach().clone() the sources if a "
               "new, separate tensor is meant")
        related = [Related("source", h.name, None, None) for h in hits[1:]]
        return [self.finding(ctx, subject, ctx.loc(event.site), fix,
                             {"func": event.func, "fix": fix, "name": display(name, "a tensor")},
                             related)]
