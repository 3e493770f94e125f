"""GG006 leaf-inplace: an in-place op on a leaf that requires grad, with grad mode on."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterator

import torch

from ..lookup.names import find_names, resolve

from ..events import InplaceOp
from ..model import Finding, Message
from .shared.inplace import describe_inplace, line_code, line_stmt, out_of_place, written_name
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["LeafInplace"]

# In-place methods PyTorch allows on a leaf that requires grad: they change no data autograd uses.
_ALLOWED = frozenset({"detach_"})


def written_leaf(t: Any) -> torch.Tensor | None:
    """The leaf that requires grad which writing into `t` would change (`t` itself or its base),
    i.e. exactly when PyTorch refuses the in-place op."""
    if not isinstance(t, torch.Tensor):
        return None
    if t.grad_fn is None and t.requires_grad:
        return t
    if t._is_view():
        # `p[0].add_(1)`, `emb.weight[idx] = 0`: a view of the leaf (also one made under no_grad,
        # which PyTorch refuses with its "view was created in no_grad mode" message).
        base = t._base
        if base is not None and base.grad_fn is None and base.requires_grad:
            return base
    return None


class LeafInplace(Rule):
    """## What it does
    Fires before an in-place op (`+=`, `-=`, slice assignment, `p.add_(...)`, `zero_()`,
    `relu(inplace=True)`, `out=`) writes into a leaf tensor that requires grad, or into a view of
    one, while grad mode is on: a manual SGD step written without `torch.no_grad()`, an embedding
    row zeroed by `emb.weight[0] = 0`, `x += 1` on a tensor created with `requires_grad=True`.

    ## Why is this bad?
    Autograd cannot record a change to a leaf: the leaf's gradient would no longer match its
    value. PyTorch refuses with "a leaf Variable that requires grad is being used in an in-place
    operation", which names neither the tensor nor the line that meant to update it.

    ## Example
    ```python
    w = torch.randn(3, 1, requires_grad=True)
    for x, y in data:
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        w -= lr * w.grad            # in place, with grad mode on
    ```

    ## Use instead
    ```python
        with torch.no_grad():       # an update is not part of the model's computation
            w -= lr * w.grad
            w.grad.zero_()
    ```
    or `w = w + 1` (out of place) when the change is part of the computation.

    ## Known problems
    Only in-place ops that pass through the guard's recording are seen (the first iterations and
    after any error finding); `.data` writes are invisible to autograd and are never reported.
    """

    code = "GG006"
    slug = "leaf-inplace"
    severity = "error"
    summary = "an in-place op on a leaf that requires grad, outside torch.no_grad()"
    # two stories, both refused by PyTorch: the op writes into the leaf itself (`w -= lr * g`), or
    # into a view of it (`emb.weight[0].zero_()`, `p[0].add_(1)`), which changes a part of the
    # leaf (a slice assignment `emb.weight[0] = 0` writes into the leaf itself: `leaf`)
    messages = (
        Message("leaf", "error",
                "{name} is a leaf tensor that requires grad, and {op} at line {line} changes it "
                "in place with grad mode on; PyTorch refuses this. {fix}",
                "an in-place op writes into a leaf that requires grad, with grad mode on"),
        Message("view-of-leaf", "error",
                "{name} is a leaf tensor that requires grad, and {op} at line {line} changes a "
                "part of it in place with grad mode on; PyTorch refuses this. {fix}",
                "an in-place op writes into a view of a leaf that requires grad "
                "(`p[0].add_()`), with grad mode on"),
    )
    events = (InplaceOp,)

    def detect(self, event: InplaceOp, ev: Evidence) -> Iterator[Detection]:
        # Quiet under no_grad (an update is the legitimate kind). Inside optimizer.step() too: torch's
        # optimizers update under no_grad; a step of the user's own that runs with grad mode on (a
        # custom optimizer written without @torch.no_grad()) is refused by PyTorch like any other
        # in-place write into a leaf, so it is reported like one.
        if not event.grad_enabled or event.func in _ALLOWED:
            return
        leaf = written_leaf(event.target)
        if leaf is None:
            return
        yield Detection("leaf" if event.target is leaf else "view-of-leaf", leaf)

    def describe(self, d: Detection, event: InplaceOp, ctx: RuleContext) -> Finding:
        leaf = d.subject
        hit = ctx.name_of(leaf)
        frame = event.site[0] if event.site else None
        subject = ctx.subject(leaf, hit=hit)
        written = written_name(frame)
        if subject.name is None:
            # no live variable holds it (a temporary view): the name written on the line
            subject = replace(subject, name=written)
        elif written and not written.isidentifier() and written != subject.name \
                and _written_is(written, leaf, subject.name, ctx):
            # the name as written on the offending line (`cconv.weight`, `...layer[layer]...`)
            # over the canonical module path, which stays in the summary; a bare loop variable
            # (`for p in model.parameters(): p.add_(...)`) says less than the path, which wins
            subject = replace(subject, name=written, summary=f"{subject.name}: {subject.summary}")
        if hit is not None and hit.scope == "element" and subject.name == hit.name \
                and isinstance(leaf, torch.nn.Parameter):
            # an element of a container (`group['params'][0]` inside an optimizer's step) says less
            # than the module path the training code knows the parameter by (`model.weight`)
            path = next((h for h in find_names(lambda v: v is leaf, ctx.frames()) if h.scope == "parameter"), None)
            if path is not None:
                subject = replace(subject, name=path.name)
        name = subject.name
        fix = self._fix(ctx, leaf, name, frame)
        # the fix goes on the offending line itself (under torch.no_grad(), or out of place)
        related = ctx.fix_at(ctx.loc(event.site), name, "torch.no_grad()")
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"op": describe_inplace(event.func, frame), "line": frame.line if frame else "?",
                             "fix": fix, "name": display(name, "A leaf tensor")}, related,
                            message=d.message)

    @staticmethod
    def _fix(ctx: RuleContext, leaf: torch.Tensor, name: str | None, frame: Any) -> str:
        text = line_code(frame)
        code = f"`with torch.no_grad(): {text}`" if line_stmt(frame) is not None else "the update"
        updating = (isinstance(leaf, torch.nn.Parameter) or ctx.is_optimized(leaf)
                    or leaf.grad is not None)
        if updating:
            # a parameter changed by hand (manual SGD, zeroing a padding row): not part of the graph
            hint = " (or let an optimizer do the update)" if ".grad" in text else ""
            return f"Wrap it in torch.no_grad(): {code}{hint}"
        alt = out_of_place(frame)
        if alt is not None:
            return (f"Write it out of place, `{alt}`, if the change is part of the computation; "
                    f"or {code} if it updates {display(name, 'the tensor')}")
        return (f"If it updates {display(name, 'the tensor')}, wrap it in torch.no_grad(): {code}; "
                "if it is part of the computation, compute a new tensor instead (clone() first)")


def _written_is(written: str, leaf: torch.Tensor, canonical: str, ctx: RuleContext) -> bool:
    """Whether the expression written on the line holds `leaf`: it evaluates to it in the user's
    frames, or (subscripted by a variable, `layer[layer]`, which is not evaluated) it ends in the
    same attribute path as the canonical name."""
    hit = resolve(written, ctx.frames())
    if hit is not None:
        return hit.value is leaf
    tail = written.rsplit("]", 1)[-1]
    return bool(tail) and tail.startswith(".") and canonical.endswith(tail)
