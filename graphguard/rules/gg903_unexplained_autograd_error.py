"""GG903 unexplained-autograd-error: PyTorch raised an autograd error no rule predicted."""
from __future__ import annotations

from typing import Any

import torch

from ..events import AutogradError
from ..model import Finding, Message, Related, Role, Subject
from .base import Detection, Rule, display
from .context import Evidence, RuleContext
from .gg001_stale_graph import StaleGraph
from .gg005_inplace_saved_tensor import InplaceSavedTensor
from .gg006_leaf_inplace import LeafInplace
from .gg009_loss_without_grad import LossWithoutGrad
from .gg012_non_scalar_loss import NonScalarLoss
from .gg014_no_grad_forward import INFERENCE_SAVE, NoGradForward
from .gg015_checkpoint_no_grad_input import CheckpointNoGradInput

__all__ = ["UnexplainedAutogradError", "error_family"]

MAX_NODES = 3  # graph nodes named in the account (their creation lines)

# The family of an autograd error, by what PyTorch's message says happened (the error's own
# text is the behaviour here: it is what PyTorch observed). First match wins.
_FAMILIES: tuple[tuple[str, type[Rule]], ...] = (
    ("modified by an inplace operation", InplaceSavedTensor),
    ("backward through the graph a second time", StaleGraph),
    ("saved intermediate values of the graph are freed", StaleGraph),
    ("does not require grad", LossWithoutGrad),
    ("implicitly created only for scalar outputs", NonScalarLoss),
    ("leaf Variable that requires grad is being used in an in-place", LeafInplace),
    ("a leaf Variable that requires grad", LeafInplace),
    (INFERENCE_SAVE, NoGradForward),
)

# Other rules whose error findings explain the same message: a backward from a tensor made under
# inference_mode (GG014) or whose history a reentrant checkpoint dropped (GG015) fails with the
# message of a loss without grad.
_ALSO: dict[str, tuple[str, ...]] = {LossWithoutGrad.code: (NoGradForward.code, CheckpointNoGradInput.code)}

# Messages that come from autograd (an op error that says none of these is the user's own,
# a shape mismatch or a dtype error: not ours to explain).
_AUTOGRAD_WORDS = ("grad", "backward", "autograd", "inplace", "in-place", "leaf Variable",
                   "Inference tensor", "saved tensor", "version")


def error_family(message: str) -> type[Rule] | None:
    for text, rule in _FAMILIES:
        if text in message:
            return rule
    return None


class UnexplainedAutogradError(Rule):
    """## What it does
    When PyTorch raises an autograd error inside a guarded `backward()` or op that no rule
    predicted, it explains the error after the fact with what the guard knows: the tensor the
    backward started from or the op's input, where it was made, the graph nodes involved and
    their creation lines. The finding takes the code of the error's family when the message
    names one (`modified by an inplace operation`: GG005, `backward through the graph a second
    time`: GG001, `does not require grad`: GG009, `implicitly created only for scalar outputs`:
    GG012, a leaf used in an in-place op: GG006), else GG903. Its `before_crash` is false.

    ## Why is this bad?
    A bare PyTorch autograd error names node types, shapes and version numbers, not the user's
    variables and lines; graphguard never lets one pass without its account.

    ## Example
    ```python
    y = MyFunction.apply(x)   # a custom backward that raises
    y.sum().backward()
    ```

    ## Use instead
    Read the account's lines: the op or backward that failed, the tensors it read and where they
    were made. When the family is known, its rule's page (`graphguard explain GGnnn`) has the fix.

    ## Known problems
    Reported after PyTorch raised (the finding says so): a rule that predicted the error would
    have reported it before. Errors outside the guard (or in other threads) are not seen.
    """

    code = "GG903"
    slug = "unexplained-autograd-error"
    severity = "error"
    summary = "PyTorch raised an autograd error that no rule predicted: graphguard's account of it"
    messages = (
        Message("family-error", "error",
                "PyTorch raised at line {line} ({where}): {error}; {name} {about}. {fix}",
                "PyTorch raised an error of a known family (GG001, GG005, GG006, GG009, GG012) "
                "that its rule did not predict; reported under that family's code, after the crash"),
        Message("unexplained", "error",
                "PyTorch raised at line {line} ({where}): {error}; {name} {about}. {fix}",
                "PyTorch raised an autograd error of no known family; graphguard's account of it"),
    )
    events = (AutogradError,)

    def detect(self, event: AutogradError, ev: Evidence) -> list[Detection] | None:
        if event.reported:
            return None  # a rule already reported this call before it ran
        msg = str(event.error)
        if INFERENCE_SAVE in msg:
            return None  # GG014 explains it
        if event.where == "op" and not any(w in msg for w in _AUTOGRAD_WORDS):
            return None  # the user's own error (a shape mismatch), not autograd's
        family = error_family(msg)
        # The one rule that reads findings (docs/architecture.md): it speaks only when no rule of
        # the family spoke
        if family is not None and not ev.error_codes().isdisjoint({family.code, *_ALSO.get(family.code, ())}):
            return None  # its rule reported it (an earlier iteration, or a de-duplicated repeat)
        return [Detection("family-error" if family is not None else "unexplained",
                          _subject_tensor(event), {"family": family})]

    def describe(self, d: Detection, event: AutogradError, ctx: RuleContext) -> Finding:
        msg = str(event.error)
        first = msg.splitlines()[0] if msg else type(event.error).__name__
        family, t = d.facts["family"], d.subject
        subject = ctx.subject(t) if t is not None else Subject(None, "call", "", None, None)
        loc = ctx.loc(event.site)
        related: list[Related] = []
        nodes = _involved(event, ctx)
        for label, site, it in nodes:
            related.append(Related(Role.GRAPH_NODE, None, label, ctx.loc(site), it))
        if loc is not None:
            related.append(Related(Role.RAISED_AT, None, event.op, loc, ctx.iteration))
        about = ("was being " + ("back-propagated" if event.where == "backward" else "read")
                 + (f" (made at line {subject.created_at.line})" if subject.created_at else ""))
        if nodes:
            about += "; the graph nodes involved were made at " + ", ".join(
                f"line {ctx.loc(s).line} ({lab})" for lab, s, _ in nodes if ctx.loc(s))
        if family is not None:
            fix = f"See `graphguard explain {family.code}` ({family.slug}) for this family's fix"
        else:
            fix = "Look at the lines above: the op or backward that failed and the tensors it read"
        args = {"name": display(subject.name, "the tensor"), "line": loc.line if loc else "?",
                "where": f"in `{event.op}`", "error": f'"{first[:200]}"', "about": about,
                "fix": fix}
        f = self.finding(ctx, subject, loc, fix, args, related, before_crash=False, message=d.message)
        if family is not None:  # filed under the family's code; its message id says GG903 told it
            f.code, f.slug = family.code, family.slug
        return f


def _subject_tensor(event: AutogradError) -> Any:
    ts = [t for t in event.tensors if isinstance(t, torch.Tensor)]
    for t in ts:
        if t.requires_grad:
            return t
    return ts[0] if ts else None


def _involved(event: AutogradError, ctx: RuleContext) -> list[tuple[str, Any, int]]:
    """A few graph nodes behind the backward with the user line that made each (distinct lines)."""
    scan = getattr(event.call, "scan", None)
    out: list[tuple[str, Any, int]] = []
    seen: set[tuple] = set()
    for node in getattr(scan, "nodes", None) or ():
        st = ctx.stamp(node)
        if st is None or not st.site:
            continue
        key = (st.site[0].file, st.site[0].line)
        if key in seen:
            continue
        seen.add(key)
        out.append((type(node).__name__, st.site, st.iteration))
        if len(out) >= MAX_NODES:
            break
    return out
