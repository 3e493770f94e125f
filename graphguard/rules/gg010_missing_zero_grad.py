"""GG010 missing-zero-grad: a step uses gradients that still contain the previous step's."""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch

from ..capture.weakmap import WeakIdMap
from ..events import BackwardCall, BackwardDone, GradRead, InplaceOp, ParamGroupAdded, StepCall, StepDone
from ..lookup.names import find_names
from ..lookup.owners import find_owner
from ..model import Finding, Message, Related, Role, Site, Subject
from .base import Detection, Rule, display
from .context import Evidence, RuleContext
from .shared.reads import read_by_user

__all__ = ["MissingZeroGrad"]

PROBES = 3  # stepped gradients checked for non-zero values per backward (see _still_stepped)
MAX_ALIASES = 256  # leaves compared by storage to find the one a `.data` write updates


@dataclass
class _GradState:
    """What one parameter's `.grad` looked like at the last update that used it (weakly held)."""

    grad: Any  # weakref to the .grad tensor as last seen
    version: int  # its _version then
    stepped: Site | None = None  # the update (optimizer step or manual write) that used it
    stepped_iteration: int = 0
    onto: Site | None = None  # a later backward added to that same, never-zeroed gradient
    manual: bool = False  # the update was written by hand, not an optimizer step


class MissingZeroGrad(Rule):
    """## What it does
    Follows each parameter's `.grad` from one update to the next: an `optimizer.step()` (or a
    manual update such as `w -= lr * w.grad` under `torch.no_grad()`, or `w.data -= lr * w.grad`
    in a helper, in any grad mode) used it, nothing zeroed it, a later backward added the new
    gradient onto it, and the next update is about to use the sum.
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
    A manual update of a parameter that the user's model registers (a hand-written optimizer's
    loop, `v.value.sub_(...)` over Keras-style variables) names the model (`model`, as held
    outside its own methods), whose gradients nothing clears: `model.zero_grad()` before the
    backward is the fix, not the loop variable's.

    ## Known problems
    A gradient zeroed through `.data` (`p.grad.data.zero_()`) is recognised by its value, so a
    parameter whose gradient was exactly zero looks zeroed. Manual updates are seen only while
    the guard records in full (the first iterations), which is when this shows. After those
    iterations the steps are judged on a sample (a window of two iterations per optimizer in
    every eight windows), so a `zero_grad()` that goes missing late in a run is reported within
    about sixteen steps per optimizer, not at the first one.
    """

    code = "GG010"
    slug = "missing-zero-grad"
    severity = "error"
    summary = "a step uses gradients still holding the previous step's: zero_grad() is missing"
    messages = (
        Message("stale-step", "error",
                "{name} steps on gradients that still hold the previous update's (line "
                "{stepped_line}): nothing zeroed them before the backward at line {backward_line} "
                "added the new ones{count}. {fix}",
                "optimizer.step() on gradients a backward added onto the previous step's, with no "
                "zero_grad() in between"),
        Message("stale-manual-update", "error",
                "{name} is updated from gradients that still hold the previous update's (line "
                "{stepped_line}): nothing zeroed them before the backward at line {backward_line} "
                "added the new ones. {fix}",
                "a hand-written update (`w -= lr * w.grad`, `w.data -= ...`) from a gradient that "
                "still holds the one the previous update used"),
        Message("cleared-before-step", "error",
                "{name} steps with no gradients: the backward at line {backward_line} computed "
                "them, and they were cleared (zero_grad() at line {cleared_line}) before the step. "
                "{fix}",
                "zero_grad() between backward and step: the step finds every gradient cleared"),
    )
    events = (StepDone, BackwardCall, BackwardDone, StepCall, InplaceOp, ParamGroupAdded, GradRead)
    # silent misuse, followed from a step to the next backward and step: a full window holds all
    # three, and a record left from an earlier window no longer matches (NOTE [skimmed iterations])
    skim_skip = (StepDone, BackwardCall, BackwardDone, StepCall)

    def __init__(self) -> None:
        self.states: WeakIdMap[_GradState] = WeakIdMap()  # parameter -> _GradState
        self.flagged = 0  # states whose gradient a backward added onto after the update
        self.by_optimizer: WeakIdMap[bool] = WeakIdMap()  # parameters some optimizer stepped
        self.done: WeakIdMap[bool] = WeakIdMap()  # optimizers already reported
        self.sizes: WeakIdMap[int] = WeakIdMap()  # optimizer -> parameters it held at its last step
        self.made: WeakIdMap[Any] = WeakIdMap()  # optimizer -> the site that built it (first group)
        # since the last step: the leaves backward filled (weakly, recording only), the last
        # backward's site, and where .grad was then read by torch code (zero_grad's own reads)
        self.filled: list[Any] = []
        self.last_backward: Site | None = None
        self.cleared_at: Site | None = None
        self.cleared_reported: WeakIdMap[bool] = WeakIdMap()
        # models told about manual updates: a wording-time dedup (which model registers a
        # parameter is looked up in the user's frames), kept by `describe`
        self.models_reported: WeakIdMap[bool] = WeakIdMap()

    # ---- detect: from the gradients' identities and versions only ------------------------------
    def detect(self, event: Any, ev: Evidence) -> list[Detection] | None:
        if isinstance(event, BackwardCall):
            self._before_backward(event)
        elif isinstance(event, BackwardDone):
            self._after_backward(event.call)
            if ev.recording_details() and event.call.api != "grad" and event.call.scan is not None:
                # (leaf, its .grad, that grad's version) as the backward left them
                self.filled = [(weakref.ref(v), weakref.ref(v.grad) if v.grad is not None else None,
                                v.grad._version if v.grad is not None else -1)
                               for v in event.call.scan.leaves[:256]]
                self.last_backward, self.cleared_at = event.call.site, None
        elif isinstance(event, GradRead):
            if self.filled and self.cleared_at is None and not read_by_user():
                self.cleared_at = event.site  # torch reads .grad: zero_grad(), clip_grad_norm_, ...
        elif isinstance(event, StepCall):
            out = self._cleared_before_step(event)
            self.filled = []
            if out:
                return out
            return self._at_step(event)
        elif isinstance(event, StepDone):
            self._after_step(event, ev)
        elif isinstance(event, InplaceOp):
            return self._at_manual_update(event, ev)
        elif isinstance(event, ParamGroupAdded):
            if event.optimizer not in self.made:
                self.made[event.optimizer] = event.site
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
        return call.scan.leaves

    def _before_backward(self, call: BackwardCall) -> None:
        candidates = []
        data = self.states.entries  # (WeakIdMap lookups inlined: every leaf, every backward)
        for p in self._accumulating(call):
            e = data.get(id(p))
            if e is None or e[0]() is not p:
                continue
            state = e[1]
            if state.stepped is None:
                continue
            g = p.grad
            if g is not None and state.grad() is g and g._version == state.version:
                candidates.append((p, state))  # untouched since the update: nobody zeroed it
                continue
            state.stepped = None  # zeroed, set to None or replaced since the update
            if state.onto is not None:
                self._set_onto(state, None)
        if candidates and self._still_stepped([p for p, _ in candidates]):
            for _, state in candidates:
                if state.onto is None:
                    self._set_onto(state, call.site)

    def _set_onto(self, state: _GradState, site: Site | None) -> None:
        # `flagged` counts the states with `onto` set, so that a step can skip the parameter
        # scan when nothing is suspected (the steady state of correct code)
        self.flagged += (site is not None) - (state.onto is not None)
        state.onto = site

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
        if not self.flagged:
            return
        for p in self._accumulating(call):
            state = self.states.get(p)
            if state is not None and state.onto is not None and p.grad is not None:
                # create_graph=True replaces .grad instead of adding in place: follow the new one
                state.grad, state.version = weakref.ref(p.grad), p.grad._version

    def _after_step(self, event: StepDone, ev: Evidence) -> None:
        opt = event.optimizer
        if opt is None or opt in self.done:
            return
        params = [p for group in opt.param_groups for p in group["params"]]
        if self.sizes.get(opt) != len(params):  # new optimizer, or add_param_group since
            self.sizes[opt] = len(params)
            for p in params:
                self.by_optimizer[p] = True
        site, it = event.site, ev.iteration - 1
        data = self.states.entries
        for p in params:
            # the common case inline: this runs for every parameter at every step
            e = data.get(id(p))
            state = e[1] if e is not None and e[0]() is p else None
            g = p.grad
            if state is None or g is None:
                self._record_update(p, site, it)
                continue
            if state.grad() is not g:
                state.grad = weakref.ref(g)
            state.version, state.stepped, state.stepped_iteration = g._version, site, it
            if state.onto is not None:
                self._set_onto(state, None)

    def _record_update(self, p: torch.Tensor, site: Site, iteration: int) -> None:
        g = p.grad
        state = self.states.get(p)
        if g is None:
            if state is not None:
                self._set_onto(state, None)
                self.states.pop(p)
            return
        if state is None:
            self.states[p] = _GradState(weakref.ref(g), g._version, site, iteration)
            return
        # reuse the record: this runs for every parameter at every step
        if state.grad() is not g:
            state.grad = weakref.ref(g)
        state.version, state.stepped, state.stepped_iteration = g._version, site, iteration
        self._set_onto(state, None)

    # ---- judging -------------------------------------------------------------------------------
    def _cleared_before_step(self, event: StepCall) -> list[Detection] | None:
        """zero_grad() between backward and step: the backward filled the optimizer's gradients,
        and at the step none of them holds anything (None, or all zeros)."""
        opt = event.optimizer
        if not self.filled or event.closure or opt in self.cleared_reported:
            return None
        held = {id(p) for g in opt.param_groups for p in g["params"]}
        filled = []
        for ref, gref, version in self.filled:
            p = ref()
            if p is None or id(p) not in held:
                continue
            g = p.grad
            if g is not None and (gref is None or gref() is g and g._version == version):
                return None  # as the backward left it (an all-zero gradient is GG013's)
            if g is not None and bool(g.ne(0).any()):
                return None  # replaced or changed, but holds a gradient
            filled.append(p)
        if not filled:
            return None
        self.cleared_reported[opt] = True
        return [Detection("cleared-before-step", opt,
                          {"count": len(filled), "made": self.made.get(opt), "site": event.site,
                           "backward": self.last_backward, "cleared": self.cleared_at})]

    def _at_step(self, event: StepCall) -> list[Detection] | None:
        opt = event.optimizer
        if not self.flagged or opt in self.done:
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
        self.done[opt] = True
        first = stale[0][1]
        found = Detection("stale-step", opt,
                          {"count": len(stale), "first": stale[0][0], "made": self.made.get(opt),
                           "site": event.site, "stepped": first.stepped,
                           "stepped_iteration": first.stepped_iteration, "onto": first.onto})
        for p, state in stale:
            self._set_onto(state, None)
            self.states.pop(p)
        return [found]

    def _at_manual_update(self, event: InplaceOp, ev: Evidence) -> list[Detection] | None:
        # A write into a leaf that has a gradient, under no_grad and outside optimizer.step(): a
        # hand-written update (`w -= lr * w.grad`, `w.data.sub_(...)`). A write through `.data`
        # is invisible to autograd whatever the grad mode (`param.data -= lr * param.grad` in a
        # d2l-style `sgd` helper runs with grad enabled), so only a write into a tensor that
        # requires grad needs no_grad to count as an update.
        if ev.in_optimizer_step() or not isinstance(event.target, torch.Tensor):
            return None
        if event.grad_enabled and event.target.requires_grad:
            return None
        leaf = self._leaf_written(event.target, ev)
        if leaf is None or leaf.grad is None or leaf in self.by_optimizer or ev.is_optimized(leaf):
            return None
        state = self.states.get(leaf)
        if state is not None and state.onto is not None and state.grad() is leaf.grad:
            found = Detection("stale-manual-update", leaf,
                              {"site": event.site, "stepped": state.stepped,
                               "stepped_iteration": state.stepped_iteration, "onto": state.onto})
            self._set_onto(state, None)
            self.states.pop(leaf)
            return [found]
        self._record_update(leaf, event.site, ev.iteration)
        state = self.states.get(leaf)
        if state is not None:
            state.manual = True
        return None

    def _leaf_written(self, t: torch.Tensor, ev: Evidence) -> torch.Tensor | None:
        if t.requires_grad:
            return t if t.grad_fn is None else None
        # `w.data -= ...`: a tensor sharing a leaf's storage, invisible to autograd. Looked up only
        # here (no_grad writes outside optimizer.step, while recording), among the leaves the
        # guard saw created and those already updated by hand.
        try:
            ptr = t.untyped_storage().data_ptr()
        except Exception:  # storage-less tensors (meta, some subclasses)
            return None
        for leaf in ev.recorded_leaf_tensors()[-MAX_ALIASES:] + self._manual():
            if leaf.shape == t.shape and leaf.untyped_storage().data_ptr() == ptr:
                return leaf
        return None

    def _manual(self) -> list[torch.Tensor]:
        return [e[0]() for e in list(self.states.entries.values())
                if e[0]() is not None and e[1].manual][:MAX_ALIASES]

    # ---- describe: names, lines, fixes ---------------------------------------------------------
    def describe(self, d: Detection, event: Any, ctx: RuleContext) -> Finding | None:
        if d.message == "cleared-before-step":
            return self._describe_cleared(d, ctx)
        if d.message == "stale-step":
            return self._describe_stale_step(d, ctx)
        return self._describe_manual(d, ctx)

    def _optimizer_subject(self, ctx: RuleContext, d: Detection, name: str | None) -> Subject:
        opt, made = d.subject, d.facts["made"]
        return Subject(name, "optimizer", f"{type(opt).__name__}, {d.facts['count']} parameter(s)",
                       ctx.loc(made) if made else None)

    def _describe_cleared(self, d: Detection, ctx: RuleContext) -> Finding:
        hit = ctx.name_of(d.subject)
        name = hit.name if hit else "optimizer"
        subject = self._optimizer_subject(ctx, d, name)
        backward, cleared = ctx.loc(d.facts["backward"]), ctx.loc(d.facts["cleared"])
        fix = (f"move {name}.zero_grad() before the backward (or after {name}.step()): "
               "clear the old gradients, then compute the new ones, then step")
        related = []
        if cleared is not None:
            related.append(Related(Role.CLEARED_AT, name, "zero_grad()", cleared))
        related.append(Related(Role.ACCUMULATED_BY, None, "backward", backward))
        related += ctx.fix_at(backward, name, "zero_grad() before this backward")
        args = {"name": display(name, "The optimizer"), "backward_line": backward.line if backward else "?",
                "cleared_line": cleared.line if cleared else "?", "fix": fix}
        return self.finding(ctx, subject, ctx.loc(d.facts["site"]), fix, args, related,
                            message="cleared-before-step")

    def _describe_stale_step(self, d: Detection, ctx: RuleContext) -> Finding:
        hit = ctx.name_of(d.subject)
        name = hit.name if hit else None
        subject = self._optimizer_subject(ctx, d, name)
        fix = (f"call {name}.zero_grad() before each backward (or right after {name}.step())" if name
               else "call optimizer.zero_grad() before each backward")
        n = d.facts["count"]
        first = ctx.name_of(d.facts["first"])
        count = f" ({n} parameter{'s' if n > 1 else ''}" + (f", e.g. {first.name})" if first else ")")
        return self._finding(ctx, subject, d, fix, "stale-step", {"count": count})

    def _describe_manual(self, d: Detection, ctx: RuleContext) -> Finding | None:
        leaf = d.subject
        model = self._model_of(leaf, ctx)
        if model is not None:
            # a parameter of the user's model, updated by a hand-written optimizer's loop
            # (`v.value.sub_(...)` over Keras-style variables): the model's gradients are what
            # nothing clears, and `model.zero_grad()` is the fix; told once per model (which
            # model registers it is a question of the user's frames: asked here, not in detect)
            module, subject = model
            if module in self.models_reported:
                return None
            self.models_reported[module] = True
            name = subject.name
            fix = (f"zero the model's gradients before each backward: {name}.zero_grad()  "
                   "(or set each parameter's .grad to None after the update)")
        else:
            subject = ctx.subject(leaf)
            name = subject.name
            fix = (f"zero it after the update: {name}.grad.zero_()  (or {name}.grad = None)" if name
                   else "zero the gradient after each update: w.grad.zero_()  (or w.grad = None)")
        return self._finding(ctx, subject, d, fix, "stale-manual-update", {})

    @staticmethod
    def _model_of(leaf: torch.Tensor, ctx: RuleContext) -> tuple[Any, Subject] | None:
        """The user's model that registers `leaf` as a parameter, and its subject (the name the
        user holds it by outside its own methods when there is one: `model`, not `self`); None
        for a tensor no module of the user's registers (`w` of a hand-written regression).
        Report time only."""
        owner = find_owner(leaf)
        if owner is None or owner.how != "registered":
            return None
        module = owner.root
        hits = [h for h in find_names(lambda v: v is module) if h.name != "self"]
        hit = hits[0] if hits else None
        name = hit.name if hit else owner.path.split(".", 1)[0].split("[", 1)[0]
        n = sum(1 for q in module.parameters() if q.requires_grad)
        return module, Subject(name, "module", f"{type(module).__name__}, {n} trainable parameter(s)",
                               ctx.origin(module, hit), None)

    def _finding(self, ctx: RuleContext, subject: Subject, d: Detection, fix: str, message: str,
                 args: dict[str, Any]) -> Finding:
        stepped = ctx.loc(d.facts["stepped"])
        onto = ctx.loc(d.facts["onto"])
        related = [Related(Role.STEPPED_AT, None, "step", stepped, d.facts["stepped_iteration"]),
                   Related(Role.ACCUMULATED_BY, None, "backward", onto)]
        if subject.kind == "optimizer" and subject.created_at is not None:
            related.append(Related(Role.CREATED_AT, subject.name, "optimizer", subject.created_at))
        related += ctx.fix_at(onto, subject.name, "zero_grad() before this backward")
        return self.finding(ctx, subject, ctx.loc(d.facts["site"]), fix,
                            {"stepped_line": stepped.line if stepped else "?",
                             "backward_line": onto.line if onto else "?", "fix": fix,
                             "name": display(subject.name, "The optimizer"), **args},
                            related, message=message)
