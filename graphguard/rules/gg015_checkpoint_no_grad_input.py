"""GG015 checkpoint-no-grad-input: a reentrant checkpoint whose inputs do not require grad."""
from __future__ import annotations

from typing import Iterator

import torch

from ..events import CheckpointCall
from ..model import Finding, Message, Related, Role
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["CheckpointNoGradInput"]


def _function_label(ctx: RuleContext, fn: object) -> str:
    """The checkpointed function as the user knows it: `decoder_layer`, `model.block`, `<lambda>`."""
    if isinstance(fn, torch.nn.Module):
        hit = ctx.name_of(fn)
        return hit.name if hit else type(fn).__name__
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, torch.nn.Module):  # a bound method: `block.forward`
        hit = ctx.name_of(owner)
        return f"{hit.name if hit else type(owner).__name__}.{getattr(fn, '__name__', 'forward')}"
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return qual.replace(".<locals>", "")


class CheckpointNoGradInput(Rule):
    """## What it does
    Watches every reentrant gradient checkpoint (`torch.utils.checkpoint.checkpoint(fn, *inputs,
    use_reentrant=True)`, the reentrant default of older code, `checkpoint_sequential(...)`) and
    fires when the checkpointed function reads tensors that require grad (its parameters) while
    none of the checkpoint's inputs requires grad, with autograd on.

    ## Why is this bad?
    The reentrant checkpoint runs the function under `no_grad` and builds its graph node only from
    its inputs. With no input that requires grad, the output has no history: the parameters inside
    the checkpointed function silently get no gradient and never learn (PyTorch only warns "None of
    the inputs have requires_grad=True"), or the backward fails when nothing else trains. It
    happens when the first layers are frozen (an embedding of a LoRA fine-tune) or when the
    checkpointed segment is the first one and takes the raw data.

    ## Example
    ```python
    for layer in self.layers:
        hidden_states = checkpoint(layer, hidden_states, use_reentrant=True)
    ```

    ## Use instead
    ```python
    for layer in self.layers:
        hidden_states = checkpoint(layer, hidden_states, use_reentrant=False)
    # or, with the reentrant form, an input that requires grad:
    hidden_states.requires_grad_(True)   # (Hugging Face: model.enable_input_require_grads())
    ```

    ## Known problems
    Only calls made while the guard records (the first iterations) are seen. A checkpoint under
    `torch.no_grad()` (evaluation) and a function whose parameters are all frozen stay quiet.
    """

    code = "GG015"
    slug = "checkpoint-no-grad-input"
    severity = "error"
    summary = "a reentrant checkpoint with no input that requires grad: its parameters get no gradient"
    messages = (
        Message("no-grad-input", "error",
                "checkpoint({func}, {name}, ...) runs with use_reentrant=True but no input requires "
                "grad, so {params} inside it get no gradient. Fix: {fix}",
                "a reentrant checkpoint, with autograd on, whose function reads tensors that "
                "require grad while none of its inputs does"),
    )
    events = (CheckpointCall,)

    def detect(self, event: CheckpointCall, ev: Evidence) -> Iterator[Detection]:
        # the call as the run saw it: grad mode on, the function read tensors that require grad,
        # and neither an input nor an output has history (the reentrant form made none)
        if not event.grad_enabled or not event.used:
            return
        if any(t.requires_grad for t in event.inputs) or any(t.requires_grad for t in event.outputs):
            return
        yield Detection("no-grad-input", event.inputs[0] if event.inputs else None,
                        {"used": list(event.used)})

    def describe(self, d: Detection, event: CheckpointCall, ctx: RuleContext) -> Finding:
        subject = ctx.subject(d.subject)
        func = _function_label(ctx, event.function)
        related = []
        labels = []
        used = d.facts["used"]
        for t in used[:4]:
            hit = ctx.name_of(t)
            made = ctx.creation(t)
            label = hit.name if hit else None
            related.append(Related(Role.CHECKPOINTED, label, None, ctx.loc(made[0]) if made else None))
            if label:
                labels.append(f"`{label}`")
        more = len(used) - len(labels)
        params = ", ".join(labels) + (f" and {more} more" if labels and more > 0 else "")
        if not labels:
            params = f"{len(used)} tensor(s) that require grad"
        name = subject.name
        fix = ("pass use_reentrant=False to checkpoint(...), or give it an input that requires "
               f"grad ({name or 'the input'}.requires_grad_(True))")
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"func": func, "params": params, "fix": fix,
                             "name": display(name, "its input")}, related,
                            message="no-grad-input")
