"""GG104 copy-construct-detach: torch.tensor(...) built from tensors that require grad."""
from __future__ import annotations

from typing import Iterator

from ..events import CopyConstruct
from ..lookup.assigned import assigned_target
from ..model import Finding, Message, Related, Role, SourceLoc, Subject
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["CopyConstructDetach"]


class CopyConstructDetach(Rule):
    """## What it does
    Fires when `torch.tensor(...)`, `torch.as_tensor(...)` or `.new_tensor(...)` is built from
    tensors that require grad (also inside a list: `torch.tensor([a[0], a[1]])`).

    The finding names the copy as the user assigned it (`log_probs = torch.tensor([...])`), the
    tensor made without history; the tensors it copies are `source` entries.

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
    # one story: a copy of tensors that require grad has no history. `{copy}` only says, when
    # the user assigned the copy to a name, which name (" into `pos`"), not another story
    messages = (
        Message("copy-drops-history", "warning",
                "{func}(...) copies {source}, which requires grad{copy}: the copy has no history. "
                "Fix: {fix}",
                "torch.tensor / as_tensor / new_tensor built from tensors that require grad"),
    )
    events = (CopyConstruct,)

    def detect(self, event: CopyConstruct, ev: Evidence) -> Iterator[Detection]:
        # capture only dispatches a CopyConstruct when it found tensors that require grad in the
        # data copied (capture/recorder.py): every one is the misuse
        if event.sources:
            yield Detection("copy-drops-history", event.sources[0])

    def describe(self, d: Detection, event: CopyConstruct, ctx: RuleContext) -> Finding:
        hits = []
        for s in event.sources:
            hit = ctx.name_of(s)
            if hit is None and s._base is not None:
                hit = ctx.name_of(s._base)
            if hit is not None and all(h.name != hit.name for h in hits):
                hits.append(hit)
        source = ctx.subject(hits[0].value if hits else event.sources[0], hit=hits[0] if hits else None)
        fix = ("use torch.stack([...]) to keep the graph, or .detach().clone() the sources if a "
               "new, separate tensor is meant")
        # the subject is the copy, the tensor made without history, as the user wrote it
        # (`log_probs = torch.tensor([...])`); its sources are `source` entries (the fix detaches
        # them). A copy assigned to no name is described by what it copies.
        made = assigned_target(event.site, call=event.func) if event.site else None
        related = [Related(Role.SOURCE, h.name, None, source.created_at if k == 0 else None)
                   for k, h in enumerate(hits[:4])]
        if made is not None:
            subject = Subject(made[0], "tensor", "", SourceLoc.from_frame(made[1]), ctx.iteration)
            related += ctx.fix_at(made[1], made[0], f"{event.func}(...) copy")
        else:
            subject, related = source, related[1:]
        what = display(hits[0].name if hits else None, "a tensor")
        copy = f" into {display(made[0])}" if made is not None else ""
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"func": event.func, "fix": fix, "source": what, "copy": copy,
                             "name": display(subject.name, "a tensor")},
                            related, message=d.message)
