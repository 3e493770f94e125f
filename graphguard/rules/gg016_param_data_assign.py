"""GG016 param-data-assign: `param.data = ...` replaces what the optimizer updates."""
from __future__ import annotations

import ast
import dataclasses
import weakref
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import torch

from ..capture.graph import leaf_of, walk
from ..events import DataAssign, ParamGroupAdded, StepCall
from ..lookup.source import statement_at
from ..model import Finding, Frame, Message, Related, Role
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["ParamDataAssign"]


def written_target(frame: Frame) -> str | None:
    """`self.decoder.weight` for a line `self.decoder.weight.data = ...` (wording only)."""
    stmt = statement_at(frame.file, frame.line)
    for node in ast.walk(stmt) if stmt is not None else ():
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(el, ast.Attribute) and el.attr == "data":
                        return ast.unparse(el.value)
    return None


def updated_by_an_optimizer(t: torch.Tensor, optimizers: Iterable[Any]) -> bool:
    """Whether an optimizer's step can have changed `t`: it can get a gradient (requires grad),
    holds one, or one of `optimizers` (those the guard saw given parameters or stepping) keeps
    state for it (it was updated while it required grad).
    A frozen copy held by the optimizer only because `model.parameters()` includes it (MoCo's
    key encoder, a momentum target) gets no gradient, so every step skips it: its `.data` is
    the program's to replace."""
    if t.requires_grad or t.grad is not None:
        return True
    for opt in optimizers:
        state = getattr(opt, "state", None)
        try:
            if state is not None and t in state and state[t]:
                return True
        except Exception:  # a foreign optimizer's state that is not a mapping of tensors
            continue
    return False


def same_memory(t: torch.Tensor, v: object) -> bool:
    """Whether assigning `v` to `t.data` changes nothing: `v` is `t`'s own data (same memory,
    shape, strides and dtype). nn.Module._apply does `param.data = fn(param)` for every
    parameter, and `.cpu()` / `.to(device)` on a tensor already there return it unchanged
    (Lightning moves the model to the CPU when fit ends)."""
    if v is t:
        return True
    if not isinstance(v, torch.Tensor):
        return False
    try:
        return (v.data_ptr() == t.data_ptr() and v.dtype == t.dtype and v.shape == t.shape
                and v.stride() == t.stride())
    except Exception:  # no storage to compare (meta, sparse, some subclasses)
        return False


def written_since_step(t: torch.Tensor, ev: Evidence) -> bool:
    """Whether the program itself wrote `t` in place after the last optimizer step (the latest
    recorded write to its storage is of this iteration, and nothing wrote it since): assigning
    `.data` then replaces that write, not the update. SAM climbs to `w + e(w)` with `p.add_(e_w)`
    and goes back with `p.data = old_p` before the real step; weight-perturbation schemes do the
    same. Every step ends an iteration, so a write of this iteration is not an optimizer's."""
    try:
        ptr = t.untyped_storage().data_ptr()
    except Exception:  # a tensor without storage (meta, some subclasses): no record
        return False
    rec = ev.inplace_writes().get(ptr)
    return rec is not None and rec.iteration == ev.iteration and rec.version == t._version


def fingerprint(t: torch.Tensor) -> tuple[float, float] | None:
    """Two float64 sums of `t`'s values (plain and absolute): enough to tell whether the values a
    parameter holds at a step are the ones it held before an assignment replaced them. Read
    only while a finding waits for that step, never per op."""
    try:
        with torch.no_grad():
            d = t.detach()
            return (float(d.sum(dtype=torch.float64)), float(d.abs().sum(dtype=torch.float64)))
    except Exception:  # no values to read (meta, sparse, complex, some subclasses): judge as before
        return None


MAX_WALK = 10_000  # graph nodes read to tell a self-update apart (bounded: beyond it, not one)


def only_from_itself(t: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether the history of `v` reaches no trainable leaf but `t` itself: `v` is computed from
    `t` alone (with constants and detached values), as in a hand-written update of a leaf written
    back through `.data` (PGD's `delta.data = clamp(delta + alpha * grad.sign(), -eps, eps)`,
    GradNorm's `w.data = w / w.sum() * T`). Dropping that history loses no gradient: the only
    tensor it would carry one to is the one being replaced. Read only when such an assignment is
    made (rare), and cut off after MAX_WALK nodes."""
    w = walk([v.grad_fn], MAX_WALK)
    if w.truncated:
        return False
    leaves = [leaf for leaf in map(leaf_of, w.nodes) if leaf is not None]
    return bool(leaves) and all(leaf is t for leaf in leaves)


def holds(opt: Any, t: torch.Tensor) -> bool:
    """Whether optimizer `opt` has `t` in one of its parameter groups (an object without
    param_groups, a wrapper, counts as holding it)."""
    groups = getattr(opt, "param_groups", None)
    if not groups:
        return True
    try:
        return any(p is t for g in groups for p in g["params"])
    except Exception:
        return True


@dataclass
class _Waiting:
    """An assignment's finding, held until the next step of an optimizer holding the parameter."""

    ref: weakref.ref  # the parameter (weakly: the guard keeps no tensor alive)
    before: tuple[float, float] | None  # fingerprint of the values the assignment replaced
    steps: int  # optimizer steps done when it was assigned
    seen: int  # steps this rule had judged by then (the difference to `steps` is skimmed ones)
    # the assignment's detection: `describe` words it while the assignment's frames are live and
    # leaves the finding in its facts ("finding"), reported at the step (NOTE [worded early])
    detection: Detection


MAX_WAITING = 4096  # parameters with an assignment waiting for its step (bounded: ids are reused)


class ParamDataAssign(Rule):
    """## What it does
    Fires when `t.data = value` is assigned, outside `optimizer.step()`, to a parameter that an
    optimizer holds, once that optimizer has stepped (in `forward` or in the training loop), and
    when the assigned value carries autograd history (whose history the assignment drops).

    ## Why is this bad?
    Assigning `.data` swaps the tensor under the parameter behind autograd's and the optimizer's
    back. In the loop it overwrites what the last `optimizer.step()` computed (every update
    discarded, or a projection the gradient never sees, while Adam's moments keep describing the
    old values). In `forward` the gradient is computed at a point the optimizer did not choose and
    the normalization is not differentiated. A value with history (predicted weights written into
    another network) loses it: what it was computed from never gets a gradient.

    ## Example
    ```python
    def forward(self, x):
        self.decoder.weight.data = F.normalize(self.decoder.weight.data, dim=0)
        return self.decoder(self.encoder(x))
    ```

    ## Use instead
    ```python
    def forward(self, x):
        w = F.normalize(self.decoder.weight, dim=0)     # differentiable: the gradient sees it
        return F.linear(self.encoder(x), w, self.decoder.bias)
    # or, to project after the update on purpose: with torch.no_grad(): p.copy_(...)
    # predicted weights: torch.func.functional_call(model, {"conv1.weight": w}, (x,))
    ```

    ## Known problems
    A replacement the program undoes itself before the next step is not reported: the step
    then updates the values that were replaced, so nothing is lost (BinaryConnect/BinaryNet
    keep the real-valued weight in `p.org`, run `forward` with `p.data = sign(p.org)` and put
    `p.data.copy_(p.org)` back before `optimizer.step()`). So an assignment without history is
    judged at the next step of an optimizer that holds the parameter, not where it is made.
    Loading weights into a parameter before the first step (initialization) is not reported, nor
    are parameters no optimizer holds (an EMA copy updated by `ema.data = ...`) or that it holds
    but never updates (a frozen momentum encoder among `model.parameters()`: no gradient, no
    optimizer state), or that the program perturbed in place itself since the last step and
    now puts back (SAM's `p.add_(e_w)` ... `p.data = old_p`), unless the value assigned has
    history. In-place writes (`p.data.clamp_(...)`, weight clipping) are not
    assignments and stay quiet. A value whose history reaches no trainable leaf but the target
    itself (a hand-written update: PGD's `delta.data = clamp(delta + a * grad.sign(), -eps, eps)`)
    drops no gradient: it is judged as a value without history.
    """

    code = "GG016"
    slug = "param-data-assign"
    severity = "error"
    summary = "`param.data = ...` replaces what the optimizer updates, or drops the value's history"
    # two stories: the value assigned has history that the assignment drops (told at once), or
    # the assignment replaces what an optimizer updates (told at that optimizer's next step,
    # unless the program put the values back by then)
    messages = (
        Message("history-dropped", "error",
                "{name}.data = ... at line {line} drops the history of the value assigned: what it "
                "was computed from gets no gradient through it. Fix: {fix}",
                "a value with autograd history is assigned to a tensor's .data"),
        Message("replaces-update", "error",
                "{name}.data = ... at line {line} replaces the parameter an optimizer updates: its "
                "update is overwritten and the gradient never sees the change. Fix: {fix}",
                "`param.data = ...` on a parameter an optimizer has stepped, not undone before "
                "its next step"),
    )
    events = (DataAssign, StepCall, ParamGroupAdded)
    # a waiting assignment whose step falls in a skimmed iteration is dropped, not misjudged
    # (a step went by that this rule did not see); the next assignment in a judged iteration
    # waits again
    skim_skip = (StepCall,)

    # NOTE [worded early]: an assignment without history is judged at the next step of an
    # optimizer that holds the parameter, but named where it is made: the user's frames that
    # hold the parameter under the name they wrote (`self.decoder.weight` inside forward) are
    # live only then. So `detect` keeps the assignment's Detection waiting, `describe` words it
    # at once and leaves the Finding in its facts (reporting nothing yet), and the step's
    # `detect` hands that finding on in a Detection of the same message, which `describe`
    # returns as it is. The decision (report or not) is detect's alone, at both events.

    def __init__(self) -> None:
        self._waiting: dict[int, _Waiting] = {}
        self._seen = 0  # optimizer steps this rule was called for
        # the optimizers the guard saw given parameters or stepping (weakly): whose state tells
        # whether a frozen parameter was ever updated (`updated_by_an_optimizer`)
        self._optimizers: dict[int, weakref.ref] = {}

    def detect(self, event: DataAssign | StepCall | ParamGroupAdded, ev: Evidence) -> Iterator[Detection]:
        if isinstance(event, ParamGroupAdded):
            self._note_optimizer(event.optimizer)
            return iter(())
        if isinstance(event, StepCall):
            self._seen += 1
            self._note_optimizer(event.optimizer)
            return iter(self._judge_step(event, ev) if self._waiting else ())
        return iter(self._judge_assign(event, ev))

    def describe(self, d: Detection, event: DataAssign | StepCall, ctx: RuleContext) -> Finding | None:
        if "finding" in d.facts:  # a waiting assignment's finding, worded when it was made
            return d.facts["finding"]
        f = self._word(d, event, ctx)
        if d.facts.get("waits"):
            d.facts["finding"] = f  # reported at the step (NOTE [worded early])
            return None
        return f

    def _note_optimizer(self, opt: Any) -> None:
        try:
            self._optimizers.setdefault(id(opt), weakref.ref(opt))
        except TypeError:  # an optimizer that cannot be weakly referenced: its state is not read
            pass

    def _known_optimizers(self) -> list[Any]:
        out = []
        for key, ref in list(self._optimizers.items()):
            opt = ref()
            if opt is None:
                del self._optimizers[key]
            else:
                out.append(opt)
        return out

    def _judge_step(self, event: StepCall, ev: Evidence) -> list[Detection]:
        """The step that the waiting assignments were made before: report those whose parameter
        does not hold again the values the assignment replaced."""
        out: list[Detection] = []
        steps = ev.optimizer_steps()
        for key, w in list(self._waiting.items()):
            t = w.ref()
            # steps done since the assignment that this rule was not called for (skimmed): one
            # of them may have been the step that judged it
            unseen = (steps - w.steps) - (self._seen - 1 - w.seen)
            if t is None or unseen > 0:
                del self._waiting[key]
                continue
            if not holds(event.optimizer, t):
                continue  # another optimizer's step (a GAN's other model): wait for its own
            del self._waiting[key]
            if w.before is not None and fingerprint(t) == w.before:
                continue  # put back before the step: the update lands on what was replaced
            found = w.detection.facts.get("finding")
            if found is not None:  # None: the message is muted, never worded
                out.append(Detection(w.detection.message, None, {"finding": found}))
        return out

    def _wait(self, t: torch.Tensor, ev: Evidence, d: Detection) -> None:
        steps = ev.optimizer_steps()
        w = self._waiting.get(id(t))
        if w is not None and w.ref() is t and steps - w.steps == self._seen - w.seen:
            return  # a second assignment before the same step: the first one replaced the update
        if len(self._waiting) >= MAX_WAITING:
            del self._waiting[next(iter(self._waiting))]
        self._waiting[id(t)] = _Waiting(weakref.ref(t), fingerprint(t), steps, self._seen, d)

    def _judge_assign(self, event: DataAssign, ev: Evidence) -> list[Detection]:
        t, v = event.target, event.value
        if not isinstance(t, torch.Tensor) or ev.in_optimizer_step():
            return []
        history = isinstance(v, torch.Tensor) and v.grad_fn is not None
        if history and t.is_leaf and only_from_itself(t, v):
            # a hand-written update of the leaf from its own value: nothing else loses a
            # gradient; judged as a value without history (an optimizer's parameter still is)
            history = False
            v = v.detach()
        if not history and same_memory(t, v):
            return []  # a no-op: the parameter gets its own data back
        if history:
            return [Detection("history-dropped", t, {"value": v})]
        if not (ev.is_optimized(t) and ev.optimizer_steps() > 0
                and updated_by_an_optimizer(t, self._known_optimizers())
                and not written_since_step(t, ev)):
            return []
        # worded now (the user's frames are live here), reported at the step unless undone by then
        d = Detection("replaces-update", t, {"waits": True})
        self._wait(t, ev, d)
        return [d]

    def _word(self, d: Detection, event: DataAssign, ctx: RuleContext) -> Finding:
        """The finding of an assignment, named from the line that makes it."""
        t = d.subject
        history = d.message == "history-dropped"
        subject = ctx.subject(t, kind="parameter" if isinstance(t, torch.nn.Parameter) else "tensor")
        written = written_target(event.site[0]) if event.site else None
        if written and written != subject.name:
            subject = dataclasses.replace(subject, name=written)
        name = subject.name
        line = event.site[0].line if event.site else "?"
        related = []
        if history:
            v = d.facts["value"]
            hit = ctx.name_of(v)
            made = ctx.creation(v)
            related.append(Related(Role.HISTORY_DROPPED, hit.name if hit else None, None,
                                   ctx.loc(made[0]) if made else None))
            fix = ("use the value itself in the computation (torch.func.functional_call(model, "
                   "{...}, inputs), or a differentiable forward) instead of writing it into .data")
        else:
            fix = (f"compute with the transformed value differentiably in forward (w = f({name or 'param'})), "
                   f"or update in place under torch.no_grad() after optimizer.step() "
                   f"({name or 'param'}.copy_(...))")
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"line": line, "fix": fix, "name": display(name, "a parameter")},
                            related, message=d.message)
