"""GG010 missing-zero-grad: a step uses gradients that still contain the previous step's."""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.weak import WeakIdKeyDictionary

from ..events import BackwardCall, BackwardDone, InplaceOp, StepCall, StepDone
from ..records import Finding, Related, Site, Subject
from .base import Rule, display

__all__ = ["MissingZeroGrad"]

PROBES = 3  # stepped gradients checked for non-zero values per backward (see _still_stepped)
MAX_ALIASES = 4096  # storage pointers remembered for `.data` writes (manual updates)


@dataclass
class _GradState:
    """What one parameter's `.grad` looked like at the last update that used it (weakly held)."""

    grad: Any  # weakref to the .grad tensor as last seen
    version: int  # its _version then
    stepped: Site | None = None  # the update (optimizer step or manual write) that used it
    stepped_iteration: int = 0
    onto: Site | None = None  # a later backward added to that same, never-zeroed gradient


def _grad_ref(p: torch.Tensor) -> tuple[Any, int] | None:
    g = p.grad
    return (weakref.ref(g), g._version) if g is not None else None


def _untouched(state: _GradState, p: torch.Tensor) -> bool:
    """p.grad is the very tensor the update used, not written since: nobody zeroed it."""
    g = p.grad
    return g is not None and state.grad() is g and g._version == state.version


class MissingZeroGrad(Rule):
    """## What it does
    Follows each parameter's `.grad` from one update to the next: an `optimizer.step()` (or a
    manual update such as `w -= lr * w.grad` under `torch.no_grad()`) used it, nothing zeroed it,
    a later backward added the new gradient onto it, and the next update is about to use the sum.
    It fires at that second update, naming the optimizer (or the tensor) and the earlier step.

    ## Why is this bad?
    `backward()` adds into `.grad`; it never overwrites it. Without `zero_grad()` every step uses
    the sum of all gradients so far, so the updates grow, the loss oscillates or diverges, and
    nothing crashes.

    ## Example
    ```python
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()            # the next backward adds onto this step's gradient
    ```

    ## Use instead
    ```python
    for x, y in loader:
        optimizer.zero_grad()       # or zero_grad(set_to_none=False), model.zero_grad(), p.grad = None
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    ```
    Gradient accumulation on purpose (several backwards, one step, then zero) is not reported.

    ## Known problems
    A gradient zeroed through `.data` (`p.grad.data.zero_()`) is recognised by its value, so a
    parameter whose gradient was exactly zero looks zeroed. Manual updates are seen only while
    the guard records in full (the first iterations), which is when this shows.
    """

    code = "GG010"
    slug = "missing-zero-grad"
    severity = "error"
    summary = "a step uses gradients still holding the previous step's: zero_grad() is missing"
    template = ("{name} {verb} that still hold the previous update's (line {stepped_line}): "
                "nothing zeroed them before the backward at line {backward_line} added the new "
                "ones{count}. {fix}")
    events = (StepDone, BackwardCall, BackwardDone, StepCall, InplaceOp)

    def __init__(self) -> None:
        self.states: WeakIdKeyDictionary = WeakIdKeyDictionary()  # parameter -> _GradState
        self.aliases: dict[int, Any] = {}  # storage data_ptr -> weakref to a leaf (for `.data` writes)
        self.done: weakref.WeakSet = weakref.WeakSet()  # optimizers already reported

    def check(self, event: Any, ctx: Any) -> list[Finding] | None:
        if isinstance(event, BackwardCall):
            self._before_backward(event)
        elif isinstance(event, BackwardDone):
            self._after_backward(event.call)
        elif isinstance(event, StepCall):
            return self._at_step(event, ctx)
        elif isinstance(event, StepDone):
            self._after_step(event, ctx)
        elif isinstance(event, InplaceOp):
            return self._at_manual_update(event, ctx)
        return None

    # ---- following the gradients ----------------------------------------------------------------
    @staticmethod
    def _accumulating(call: BackwardCall) -> list[torch.Tensor]:
        """The leaves this backward will add gradient into (autograd.grad adds into none)."""
        if call.api == "grad" or call.scan is None:
            return []
        if call.inputs:
            wanted = {id(t) for t in call.inputs}
            return [v for v in call.scan.leaves if id(v) in wanted]
        return list(call.scan.leaves)

    def _before_backward(self, call: BackwardCall) -> None:
        candidates = []
        for p in self._accumulating(call):
            state = self.states.get(p)
            if state is None or state.stepped is None:
                continue
            if _untouched(state, p):
                candidates.append((p, state))
            else:
                state.stepped = state.onto = None  # zeroed, set to None or replaced since the update
        if candidates and self._still_stepped([p for p, _ in candidates]):
            for _, state in candidates:
                if state.onto is None:
                    state.onto = call.site

    @staticmethod
    def _still_stepped(params: list[torch.Tensor]) -> bool:
        # `p.grad.data.zero_()` zeroes without bumping the version counter (.data has its own), so
        # an untouched version is not proof: look at the values of a few of them (cheap: only
        # parameters already suspected are looked at).
        for p in params[:PROBES]:
            if bool(p.grad.ne(0).any()):
                return True
        return False

    def _after_backward(self, call: BackwardCall) -> None:
        for p in self._accumulating(call):
            state = self.states.get(p)
            ref = _grad_ref(p)
            if state is not None and ref is not None:
                # create_graph=True replaces .grad instead of adding in place: follow the new one
                state.grad, state.version = ref
            if len(self.aliases) < MAX_ALIASES and ref is not None:
                try:
                    self.aliases[p.untyped_storage().data_ptr()] = weakref.ref(p)
                except Exception:  # storage-less tensors (meta, some subclasses)
                    pass

    def _after_step(self, event: StepDone, ctx: Any) -> None:
        opt = event.optimizer
        if opt is None or opt in self.done:
            return
        for group in opt.param_groups:
            for p in group["params"]:
                self._record_update(p, event.site, ctx.iteration - 1)

    def _record_update(self, p: torch.Tensor, site: Site, iteration: int) -> None:
        g = p.grad
        if g is None:
            self.states.pop(p, None)
            return
        state = self.states.get(p)
        if state is None:
            self.states[p] = _GradState(weakref.ref(g), g._version, site, iteration)
            return
        # reuse the record: this runs for every parameter at every step
        if state.grad() is not g:
            state.grad = weakref.ref(g)
        state.version, state.stepped, state.stepped_iteration, state.onto = g._version, site, iteration, None

    # ---- judging -------------------------------------------------------------------------------
    def _at_step(self, event: StepCall, ctx: Any) -> list[Finding] | None:
        opt = event.optimizer
        if opt in self.done:
            return None
        stale = []
        for group in opt.param_groups:
            for p in group["params"]:
                state = self.states.get(p)
                if state is not None and state.onto is not None and p.grad is not None \
                        and state.grad() is p.grad:
                    stale.append((p, state))
        if not stale:
            return None
        self.done.add(opt)
        for p, _ in stale:
            self.states.pop(p, None)
        hit = ctx.name_of(opt)
        name = hit.name if hit else None
        subject = Subject(name, "optimizer", f"{type(opt).__name__}, {len(stale)} parameter(s)")
        fix = (f"call {name}.zero_grad() before each backward (or right after {name}.step())" if name
               else "call optimizer.zero_grad() before each backward")
        first = ctx.name_of(stale[0][0])
        count = f" ({len(stale)} parameter{'s' if len(stale) > 1 else ''}" + (
            f", e.g. {first.name})" if first else ")")
        return [self._finding(ctx, subject, event.site, stale[0][1], fix, "steps on gradients", count)]

    def _at_manual_update(self, event: InplaceOp, ctx: Any) -> list[Finding] | None:
        # A write into a leaf that has a gradient, under no_grad and outside optimizer.step(): a
        # hand-written update (`w -= lr * w.grad`, `w.data.sub_(...)`).
        if event.grad_enabled or ctx.rec.in_step or not isinstance(event.target, torch.Tensor):
            return None
        leaf = self._leaf_written(event.target)
        if leaf is None or leaf.grad is None or ctx.is_optimized(leaf):
            return None
        state = self.states.get(leaf)
        if state is not None and state.onto is not None and state.grad() is leaf.grad:
            self.states.pop(leaf, None)
            subject = ctx.subject(leaf)
            name = subject.name
            fix = (f"zero it after the update: {name}.grad.zero_()  (or {name}.grad = None)" if name
                   else "zero the gradient after each update: w.grad.zero_()  (or w.grad = None)")
            return [self._finding(ctx, subject, event.site, state, fix, "is updated from gradients", "")]
        self._record_update(leaf, event.site, ctx.iteration)
        return None

    def _leaf_written(self, t: torch.Tensor) -> torch.Tensor | None:
        if t.requires_grad and t.grad_fn is None:
            return t
        if t.requires_grad:
            return None
        try:  # `w.data -= ...`: a tensor sharing the leaf's storage, invisible to autograd
            ref = self.aliases.get(t.untyped_storage().data_ptr())
        except Exception:
            return None
        leaf = ref() if ref is not None else None
        return leaf if leaf is not None and leaf.shape == t.shape else None

    def _finding(self, ctx: Any, subject: Subject, site: Site, state: _GradState, fix: str,
                 verb: str, count: str) -> Finding:
        stepped = ctx.loc(state.stepped)
        onto = ctx.loc(state.onto)
        related = [Related("stepped-at", None, "step", stepped, state.stepped_iteration),
                   Related("accumulated-by", None, "backward", onto)]
        return self.finding(ctx, subject, ctx.loc(site), fix,
                            {"stepped_line": stepped.line if stepped else "?",
                             "backward_line": onto.line if onto else "?", "count": count, "verb": verb,
                             "fix": fix, "name": display(subject.name, "The optimizer")},
                            related)
