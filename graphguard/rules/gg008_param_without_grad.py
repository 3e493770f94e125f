"""GG008 param-without-grad: an optimizer steps a parameter that got no gradient, and why."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

import weakref

from ..capture.modtree import ModuleTree
from ..capture.weakmap import WeakIdMap
from ..lookup.owners import find_owner, user_modules
from ..events import BackwardDone, GradRead, GuardExit, ParamGroupAdded, StepCall, StepDone
from ..lookup.layers import attribute_reads_in_forward
from ..lookup.names import resolve
from ..lookup.origins import origin_of
from ..model import Finding, Message, Related, Role, SourceLoc
from .shared.cuts import cut_related, cut_snapshot, describe_op, fix_for_cut
from .shared.nograd import switch_of_cuts
from .shared.modules import is_container
from .shared.reads import read_by_user, read_fails_on_none
from .shared.steps import ClosureDeferral
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["ParamWithoutGrad"]


class ParamWithoutGrad(Rule):
    """## What it does
    At `optimizer.step()`, finds parameters the optimizer holds whose `.grad` is still `None`
    although the guard saw their path to the loss cut: a comparison, `argmax`, `round`,
    `torch.where` on a bool mask, `.detach()`, `.item()`, a `torch.tensor(...)` copy, or a
    `torch.no_grad()` region. It names the parameter and the op and line that cut it.

    ## Why is this bad?
    Nothing crashes, the loss is computed, the optimizer steps, and the parameter never moves.
    Training "runs" and silently learns nothing for that parameter.

    ## Example
    ```python
    mask = torch.where(dist < radius, 1.0, 0.0)    # comparison: no gradient to radius
    loss = ((image * mask - ref) ** 2).mean()
    loss.backward(); opt.step()                     # radius.grad is None
    ```

    ## Use instead
    ```python
    mask = torch.sigmoid(10 * (radius - dist))      # a soft, differentiable mask
    ```

    It also reports optimized parameters whose `.grad` stays `None` at every step although no
    cut was seen: the optimizer was built over another model instance, over a layer that was
    replaced after the optimizer was built, or over a module the forward never calls. When none
    of an optimizer's parameters ever reaches a graph the finding is an error (the step does
    nothing at all); when only some never do, a warning after two steps (a module left out of
    the forward pass may be meant; an unused module in the optimizer is at best wasted work).
    When the forward did compute with those parameters in the recorded iterations and only their
    output never reached the loss (a pretrained encoder's pooler under mean pooling, an extra
    head left unused, or a loss term left out), the finding is information, not a warning: the
    program may well be correct, and the finding still names the module. One parameter of a
    module whose other parameters do get gradients (a prompt tensor the module's forward reads as
    `self.prompt_param.data`) is named itself, with fix-at the lines of that forward that read it.

    When no parameter the optimizer holds has a gradient at its step, another optimizer holds
    them all too, and the backward before the step trained registered parameters that no
    optimizer holds (a GAN's `optm_d` built over the generator again: the discriminator step
    reaches the discriminator only), the optimizer is built over the wrong parameters: the finding says so, with fix-at the optimizer's
    construction line first (the cut that keeps its parameters out, the D step's
    `fake.detach()`, is the program's own and is still listed as cut-by).

    A step of an optimizer all of whose parameters are frozen (`requires_grad=False`) at that
    moment, after a backward, although it updated them at earlier steps, is a warning: the step
    changes nothing (a `requires_grad(D, False)` toggle left on from another part of the
    iteration, a discriminator's regularization step run while it is still frozen).

    ## Known problems
    Parameters with `requires_grad=False` (deliberately frozen) are otherwise not reported. With
    `optimizer.step(closure)` the parameters are judged after the step, once the closure has
    computed the gradients. A parameter that gets gradients only every few steps (alternating
    heads) is reported as unreached only if it got none at its first two steps; one member of a
    `ModuleList` / `ModuleDict` whose other members get gradients (a head per task, LayerDrop,
    mixture-of-experts routing) only if it got none at its first sixteen. A parameter that had a
    gradient before and gets none at a later step is not reported for a cut off this loss's path
    (a `loss.item()` logged after the previous step): the forward did not use it this time. After the first
    iterations the steps are judged on a sample (one window of iterations in eight): a parameter
    group added late that the loss never reaches is reported a few steps later.
    """

    code = "GG008"
    slug = "param-without-grad"
    severity = "error"
    summary = "an optimized parameter got no gradient: its path to the loss was cut or never made"
    # NOTE [GG008 stories]: each story a step (or a `.grad` read) can tell is a message; the
    # severity is the message's: an optimizer none of whose parameters ever reaches a graph is an
    # error, one module of it left out a warning, a layer whose output is computed and left
    # unused (or that DDP was told may be unused) information.
    messages = (
        Message("cut-by-op", "error",
                "{name} is optimized but received no gradient: its path to the loss is cut by {op} at line {line}. Fix: {fix}",
                "at a step, a parameter without gradient whose path to the loss a recorded op cut "
                "(a comparison, argmax, round, .detach(), .item(), a copy, torch.no_grad())"),
        Message("wrong-optimizer", "error",
                "{name} is optimized but received no gradient: the backward before this step of {opt} reaches none of the "
                "parameters it holds ({op} at line {line} cuts {cut_name} off), but trains "
                "{other}, which no optimizer holds: {opt} is built over the wrong parameters. "
                "Fix: {fix}",
                "an optimizer whose parameters another optimizer holds too, stepped after a "
                "backward that trained parameters no optimizer holds (a GAN's optimizer built "
                "over the generator again)"),
        Message("read-none-frozen", "error",
                "{name} is optimized but received no gradient: it is frozen (requires_grad=False) but the optimizer holds it, so "
                "its .grad is None where the step reads it. Fix: {fix}",
                "the program fails on the .grad, read as None, of a frozen parameter an "
                "optimizer holds"),
        Message("read-none-cut", "error",
                "{name} is optimized but received no gradient: its path to the loss is cut by {op} at line {line}, so its .grad "
                "is None where the program reads it. Fix: {fix}",
                "the program fails on the .grad, read as None, of an optimized parameter whose "
                "path to the loss a recorded op cut"),
        Message("read-none-unreached", "error",
                "{name} is optimized but received no gradient: the last backward did not reach it, so its .grad is None where the "
                "program reads it: its only path to the loss goes through an op with no gradient "
                "(integer indices of max/sort/topk, a comparison), or the forward does not use it. "
                "Fix: {fix}",
                "the program fails on the .grad, read as None, of an optimized parameter the last "
                "backward did not reach"),
        Message("optimizer-unreached", "error",
                "{name} is optimized but received no gradient: none of the parameters {opt} holds reached the graph of any "
                "backward (the optimizer was built over another model instance, or over a layer "
                "replaced after it was built). Fix: {fix}",
                "no parameter an optimizer holds ever reaches the graph of a backward"),
        Message("never-called", "warning",
                "{name} is optimized but received no gradient: it never reached the graph of a backward at {steps} steps while the "
                "other parameters did: the forward pass does not use it (a module never called, "
                "or replaced after the optimizer was built). Fix: {fix}",
                "some parameters of an optimizer never reach a graph while the others do: a "
                "module the forward does not call"),
        Message("unused-in-module", "warning",
                "{name} is optimized but received no gradient: it never reached the graph of a backward at {steps} steps while the "
                "other parameters of {module} did: its forward does not use it, or uses its value "
                "without history (`.data`, `.detach()`, a copy). Fix: {fix}",
                "one parameter of a module whose other parameters train never reaches a graph"),
        Message("output-unused", "info",
                "{name} is optimized but received no gradient: it never reached the graph of a backward at {steps} steps while the "
                "other parameters did: the forward computes with it, but that output never "
                "reaches the loss. Fix: {fix}",
                "the forward reads a parameter but what it computes never reaches a loss (a "
                "pooler, an extra head)"),
        Message("inherited-unused", "info",
                "{name} is optimized but received no gradient: it never reached the graph of a backward at {steps} steps; "
                "{base}.forward uses it, but {cls} overrides forward and does not. Fix: {fix}",
                "a layer (or parameter) that a base class's forward uses, left unused by the "
                "subclass whose own forward replaces it: the subclass's choice, kept as weight"),
        Message("ddp-unused", "info",
                "{name} is optimized but received no gradient: it never reached the graph of a backward at {steps} steps; the "
                "DistributedDataParallel module that holds it was built with "
                "find_unused_parameters=True or static_graph=True, which allow that. Fix: {fix}",
                "a parameter that never reaches a graph, held by a DDP module told that some may not"),
        Message("frozen-after-optimizer", "info",
                "{name} is optimized but received no gradient: requires_grad was switched off after {opt} was built: {opt} still "
                "holds it, and it gets no gradient. Fix: {fix}",
                "parameters frozen after the optimizer was built over them"),
        Message("idle-step", "warning",
                "{name} is optimized but received no gradient: every parameter {opt} holds has requires_grad=False at this step, "
                "though {opt} updated them at earlier steps: the backward before it gave them no "
                "gradient, and this step changes nothing (a requires_grad(..., False) toggle still "
                "on from another part of the iteration). Fix: {fix}",
                "a step of an optimizer all of whose parameters are frozen now, after a backward"),
    )
    events = (StepCall, StepDone, BackwardDone, ParamGroupAdded, GradRead, GuardExit)
    # a parameter left without gradient trains silently: judging a sample of the steps is enough,
    # and a skimmed iteration skips its backwards and its step alike (NOTE [skimmed iterations])
    skim_skip = (StepCall, StepDone, BackwardDone)

    UNREACHED_STEPS = 2  # steps with .grad None before a partly unreached optimizer is reported
    # ... when the parameter's module is one member of a ModuleList / ModuleDict whose other
    # members did get gradients: the forward picks members at run time (a head per task, LayerDrop,
    # mixture-of-experts routing), so a member may wait many steps for its first gradient
    SELECTED_STEPS = 16

    def __init__(self) -> None:
        # First iteration since the previous step. Gradient accumulation runs several backward
        # calls per step and, before the first step, each one closes an iteration (no optimizer
        # seen yet), so the cut may be an iteration older than the step that shows its effect.
        self.window_start = 0
        self.backwards = 0  # backward calls seen
        self.seen: WeakIdMap[int] = WeakIdMap()  # optimizer -> backward calls seen at its last step
        self.opt_sites: WeakIdMap[Any] = WeakIdMap()  # optimizer -> where it was given parameters
        self.closures = ClosureDeferral()  # step(closure): judged at its StepDone
        self.none_steps: WeakIdMap[int] = WeakIdMap()  # param -> steps judged with .grad None
        self.reached: WeakIdMap[bool] = WeakIdMap()  # param -> got a gradient at some step
        self.reported: WeakIdMap[bool] = WeakIdMap()  # param -> already reported as unreached
        # param -> optimizer steps (all, judged or skimmed) when it was first judged without .grad
        self.none_since: WeakIdMap[int] = WeakIdMap()
        self.asked: WeakIdMap[bool] = WeakIdMap()  # param -> details asked for it (light mode)
        self.last_leaves: list[Any] = []
        self.read_reported: WeakIdMap[int] = WeakIdMap()  # param -> backward count when its read was
        self.step_backwards = 0  # backward calls seen at the latest step of any optimizer
        self.root_cuts: set[int] = set()  # cut indices behind the roots of recent backwards
        self.given_trainable: WeakIdMap[bool] = WeakIdMap()  # params that required grad when given
        self.frozen_reported: WeakIdMap[bool] = WeakIdMap()  # optimizers told about frozen params
        self.idle_reported: WeakIdMap[bool] = WeakIdMap()  # optimizers told a step updated nothing
        # optimizer -> its parameters (weakly) when, at its last judged step, every one of them
        # required grad and had a gradient: while that holds, a step has nothing to report and
        # `reached` is already set for each (the steady state, judged without the per-parameter
        # bookkeeping)
        self.all_filled: WeakIdMap[list] = WeakIdMap()
        # params that a live module registered when an optimizer was given them: one that no
        # module registers at a later step belonged to a layer replaced since (dead weight)
        self.given_registered: WeakIdMap[bool] = WeakIdMap()
        # the last `.grad` read of an optimized parameter that returned None after a backward,
        # described while the read's frames were live: (weakref, read site, backward count, the
        # finding), reported if the program then fails on the None
        self.none_read_finding: tuple[Any, Any, int, Finding] | None = None
        self.cut_told: WeakIdMap[set] = WeakIdMap()  # param -> (cut's line and op, step's line) told

    # ---- detect: from capture data only -----------------------------------------------------------
    def detect(self, event: Any, ev: Evidence) -> list[Detection] | None:
        if isinstance(event, BackwardDone):
            self.backwards += 1
            # the cuts the loss was computed from: the ones that explain a missing gradient (a
            # `w.detach().clone()` snapshot for logging is a cut too, but not on the loss's path)
            for r in event.call.roots[:8]:
                self.root_cuts.update(c.index for c in ev.cuts_behind(r))
            if ev.recording_details():
                # the leaves the last backward reached (weakly): which model the loss came from
                self.last_leaves = [weakref.ref(v) for v in event.call.scan.leaves[:4096]]
            return None
        if isinstance(event, GradRead):
            return self._detect_read(event, ev)
        if isinstance(event, GuardExit):
            return self._detect_failed_read(event)
        if isinstance(event, ParamGroupAdded):
            self._note_given(event, ev)
            return None
        if self.closures.defer(event):
            return None
        self.step_backwards = self.backwards
        try:
            return self._judge_step(event, ev)
        finally:
            self.root_cuts.clear()  # the next step is judged by the backwards before it

    def _note_given(self, event: ParamGroupAdded, ev: Evidence) -> None:
        if event.optimizer not in self.opt_sites:
            self.opt_sites[event.optimizer] = event.site
        params = [q for q in event.params if isinstance(q, torch.Tensor)]
        for q in params:
            if q.requires_grad:
                self.given_trainable[q] = True
        if any(isinstance(q, torch.nn.Parameter) for q in params):
            # which of them a live module registers (one pass over the collector per optimizer
            # construction or add_param_group, shared with GG011's look at the same event)
            tree = ev.module_tree(event)
            for q in params:
                if tree.registering(q) is not None:
                    self.given_registered[q] = True

    def _judge_step(self, event: Any, ev: Evidence) -> list[Detection]:
        start, self.window_start = self.window_start, ev.iteration + (0 if isinstance(event, StepDone) else 1)
        opt = event.optimizer
        backwards = self.backwards - self.seen.get(opt, 0)
        self.seen[opt] = self.backwards
        params = [p for group in opt.param_groups for p in group["params"]]
        if self._still_filled(opt, params):
            return []
        out: list[Detection] = []
        unreached = []
        cut: list[tuple[torch.Tensor, list]] = []
        filled: set[int] | None = None
        trainable = 0
        frozen_later = []
        for p in params:
            if not isinstance(p, torch.Tensor):
                continue
            if not p.requires_grad:
                if p.grad is None and p in self.given_trainable:
                    frozen_later.append(p)
                continue
            trainable += 1
            if p.grad is not None:
                self.reached[p] = True
                continue
            if filled is None:
                filled = {id(v) for v in (r() for r in self.last_leaves) if v is not None}
            if id(p) in filled:
                continue  # the last backward reached it: its .grad was cleared since (GG010's)
            cuts = self._cuts(ev, p, start)
            if cuts and p in self.reached and not any(c.index in self.root_cuts for c in cuts):
                # No cut on this loss's path, and p had a gradient at an earlier step: the
                # forward did not use it this time (a layer dropped, another task's head), and
                # the cuts behind it are of an earlier graph (`loss.item()` logged after the
                # step), not what stopped its gradient now.
                cuts = []
            if cuts:
                if self.read_reported.get(p) != self.backwards and not (
                        any(c.index in self.root_cuts for c in cuts) and switch_of_cuts(cuts)):
                    cut.append((p, cuts))
                # else: cut from the loss by the user's own no_grad region only (GG014's)
                continue
            if backwards and p not in self.reached:
                self.none_steps[p] = self.none_steps.get(p, 0) + 1
                if p not in self.none_since:
                    self.none_since[p] = ev.optimizer_steps()
                unreached.append(p)
        if trainable == len(params) and filled is None:  # every one trainable, with a gradient
            try:
                self.all_filled[opt] = [weakref.ref(p) for p in params]
            except TypeError:  # an optimizer or tensor that cannot be weakly referenced
                pass
        else:
            self.all_filled.pop(opt)
        if (frozen_later and not trainable and len(frozen_later) == len(params) and backwards
                and opt not in self.idle_reported and any(p in self.reached for p in frozen_later)):
            # Every parameter it holds is frozen now, though it trained them at earlier steps,
            # and a backward ran since: this step updates nothing. A `requires_grad(D, False)`
            # toggle left on from another part of the iteration (a GAN's regularization step
            # run while the discriminator is still frozen for the other network's update).
            # Judged in light mode too (it may first happen late, every few iterations).
            self.idle_reported[opt] = True
            self.frozen_reported[opt] = True
            out.append(Detection("idle-step", frozen_later[0], {"params": frozen_later}))
        if frozen_later and opt not in self.frozen_reported and backwards and ev.recording_details():
            self.frozen_reported[opt] = True
            tree = ev.module_tree(event)
            for members in _by_registering(tree, frozen_later)[:2]:
                out.append(Detection("frozen-after-optimizer", members[0], {"params": members}))
        # a cut told before (the same parameter, cut at the same op, at the same step line) is
        # the same report: not grouped and described again at every judged step
        fresh = [(p, cuts) for p, cuts in cut if _told_key(cuts, event) not in self.cut_told.get(p, ())]
        if fresh:
            wrong = self._unheld_trained(ev, opt)
            tree = ev.module_tree(event) if len(fresh) > 1 else None
            for members, cuts in _by_cut_module(tree, fresh):
                out.append(Detection("wrong-optimizer" if wrong else "cut-by-op", members[0],
                                     {"params": members, "cuts": cuts, "unheld": wrong}))
            for p, cuts in fresh:
                told = self.cut_told.get(p)
                if told is None:
                    told = self.cut_told[p] = set()
                told.add(_told_key(cuts, event))
        if unreached and not out and not cut:
            if ev.recording_details():
                out.extend(self._unreached(ev, event, unreached, trainable))
            else:
                # light mode (a parameter group added late, a layer first called late): naming
                # the parameters needs recording; the next steps report them (once per parameter)
                new = [p for p in unreached if p not in self.reported and p not in self.asked]
                if new:
                    for p in new:
                        self.asked[p] = True
                    ev.want_details()
        return out

    def _still_filled(self, opt: Any, params: list[Any]) -> bool:
        """Whether `params` are the parameters `opt` held when each had a gradient at its last
        judged step, and each has one now: then this step is judged as that one was (nothing
        to report, `reached` already set), at one identity and one `.grad` check per parameter."""
        refs = self.all_filled.get(opt)
        if refs is None or len(refs) != len(params):
            return False
        for r, p in zip(refs, params):
            if r() is not p or p.grad is None or not p.requires_grad:
                return False
        return True

    def _detect_read(self, event: GradRead, ev: Evidence) -> list[Detection] | None:
        """The user reads `.grad` of an optimized parameter after a backward, and it is None: a
        read that finds None may be by design (`if p.grad is not None`, a head unused this
        iteration), so it is reported only if the program then fails on the None. When the very
        next instruction uses the value as an object (`param.grad.data`), now, before Python's
        error; otherwise it is described now (while the read's frames are live) and reported if
        the guard later closes on that failure."""
        p = event.tensor
        if not isinstance(p, torch.Tensor) or not ev.is_optimized(p):
            return None
        in_step = ev.in_optimizer_step()  # a step written by the user reading every parameter
        if not in_step and (not p.requires_grad or self.backwards <= self.step_backwards
                            or self.read_reported.get(p) == self.backwards):
            return None  # only reads after a backward of this iteration
        if p.grad is not None or not read_by_user():
            return None
        now = read_fails_on_none()
        pending = self.none_read_finding
        if not now and pending is not None and pending[0]() is p and pending[2] == self.backwards:
            return None  # described already for this parameter and backward
        cuts = self._cuts(ev, p, self.window_start) if p.requires_grad else []
        message = "read-none-frozen" if not p.requires_grad else (
            "read-none-cut" if cuts else "read-none-unreached")
        if now:
            self.read_reported[p] = self.backwards
            self.none_read_finding = None
        return [Detection(message, p, {"site": event.site, "cuts": cuts, "now": now})]

    def _detect_failed_read(self, event: GuardExit) -> list[Detection] | None:
        """The program failed on a `.grad` that was None (`norm(p.grad)` fails inside the call):
        the failing stack passes through the line of the last None read described. Reported
        after the fact."""
        pending, self.none_read_finding = self.none_read_finding, None
        exc = event.exc
        if pending is None or not isinstance(exc, (AttributeError, TypeError)) or "NoneType" not in str(exc):
            return None
        _, site, _, finding = pending
        tb, lines = exc.__traceback__, set()
        while tb is not None:  # the read's line is on the failing stack
            lines.add((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
            tb = tb.tb_next
        if not site or (site[0].file, site[0].line) not in lines:
            return None
        return [Detection(finding.message_id.split(".", 1)[1], None, {"finding": finding})]

    def _cuts(self, ev: Evidence, p: torch.Tensor, start: int) -> list:
        """The recorded cuts behind `p` since `start`, those on the loss's path first (only those,
        when there are some)."""
        cuts = [c for c in ev.cuts_for_leaf(p) if c.iteration >= start]
        on_path = [c for c in cuts if c.index in self.root_cuts]
        return on_path or cuts

    def _unheld_trained(self, ev: Evidence, opt: Any) -> list[torch.nn.Parameter] | None:
        """When no parameter `opt` holds has a gradient at its step, another optimizer holds them
        all too, and the last backward reached Parameters that no optimizer holds and that now
        have one: those Parameters (`opt` is a GAN's second optimizer built over the generator
        again; the backward trained the discriminator)."""
        if opt is None:
            return None
        mine = [q for g in opt.param_groups for q in g["params"]
                if isinstance(q, torch.Tensor) and q.requires_grad]
        if not mine or any(q.grad is not None for q in mine):
            return None
        # every one of them is also another optimizer's (`optm_d` built over the generator that
        # `optm_g` holds): a copy of another optimizer, not one whose parameters a cut keeps out
        others = [o for o in (r() for r, _ in list(self.opt_sites.entries.values()))
                  if o is not None and o is not opt]
        elsewhere = {id(q) for o in others for g in o.param_groups for q in g["params"]}
        if not all(id(q) in elsewhere for q in mine):
            return None
        held = {id(q) for q in mine}
        unheld = [v for v in (r() for r in self.last_leaves) if v is not None]
        unheld = [v for v in unheld if isinstance(v, torch.nn.Parameter) and id(v) not in held
                  and v.grad is not None and not ev.is_optimized(v)]
        return unheld or None

    def _unreached(self, ev: Evidence, event: Any, params: list[torch.Tensor],
                   trainable: int) -> list[Detection]:
        """Parameters that never reached a graph while the optimizer stepped: one detection per
        module that registers them (at most four), by what the run shows of them."""
        every = len(params) == trainable
        if not every:
            params = [p for p in params if self.none_steps.get(p, 0) >= self.UNREACHED_STEPS]
        params = [p for p in params if p not in self.reported]
        if not params:
            return []  # (before the tree: a pass over the collector, only for something to tell)
        tree = ev.module_tree(event)
        if not every:
            selected = self._selected_members(tree, params)
            steps = ev.optimizer_steps()
            waiting = {id(p) for p in params if id(p) in selected
                       and steps - self.none_since.get(p, steps) < self.SELECTED_STEPS}
            for p in params:
                if id(p) in waiting:
                    self.asked.pop(p)  # judged again at the next steps, also in light mode
            params = [p for p in params if id(p) not in waiting]
            # A Parameter no live module registers any more, though one did when the optimizer
            # was given it (the layer it belonged to was replaced and the new one is used), is
            # dead weight in the optimizer, not a part of the model that fails to learn; the
            # new layer's own trouble, if any, is GG011's. Judged once.
            dead = [p for p in params if tree.registering(p) is None
                    and isinstance(p, torch.nn.Parameter) and p in self.given_registered]
            for p in dead:
                self.reported[p] = True
            params = [p for p in params if p not in self.reported]
        if not params:
            return []
        for p in params:
            self.reported[p] = True
        out = []
        # an optimizer none of whose parameters reaches a graph is one story (it was built over
        # another model), told once for all it holds; otherwise one per module that registers them
        groups = [params] if every else _by_registering(tree, params)[:4]
        for members in groups:
            p = members[0]
            reg = tree.registering(p)
            module = reg[0] if reg is not None else None
            attr = reg[1] if reg is not None else None
            common = _common_module(tree, members) if every and len(members) > 1 else None
            if common is not None:
                # all the optimizer holds: the innermost module that registers every one of them
                module, attr = common, None
            facts: dict[str, Any] = {"params": members, "every": every, "module": module,
                                     "attr": attr, "common": common is not None}
            if every:
                message = "optimizer-unreached"
            elif ev.ddp_unused_declared(p):
                # DDP was told some parameters may get no gradient (find_unused_parameters=True):
                # a layer kept but unused is the program's stated choice. Told, not alarmed.
                message = "ddp-unused"
            elif all(ev.leaf_read(q) for q in members):
                # The forward reads it, but what it computes never reaches a loss: a pretrained
                # model's pooler or an extra head whose output is left unused is a correct
                # program (DDP's find_unused_parameters case), a forgotten loss term is not.
                # Told, not alarmed.
                message = "output-unused"
            elif (over := _overridden_user(tree, module, attr)) is not None:
                # A base class's forward uses it and the live class overrides forward without
                # it (JEM's CCF over F: energy_output): a layer the subclass inherits and chose
                # not to use, not one the program forgot to call. Told, not alarmed.
                message = "inherited-unused"
                facts["cls"], facts["base"] = over
            elif module is not None and not _covers(module, members):
                # one parameter of a module whose other parameters train (a prompt tensor the
                # forward reads as `.data`): the parameter is what gets no gradient
                message = "unused-in-module"
            else:
                message = "never-called"
            out.append(Detection(message, p, facts))
        return out

    def _selected_members(self, tree: ModuleTree, params: list[torch.Tensor]) -> set[int]:
        """The ids of those of `params` that belong to one member of a ModuleList / ModuleDict
        (two members or more) while a parameter of another member of it got a gradient at some
        step: a module the forward selects per step (a head per task, LayerDrop, mixture-of-
        experts routing), not one it never calls. Read from the module tree, whoever holds the
        model."""
        out: set[int] = set()
        verdicts: dict[tuple[int, int], bool] = {}  # (container, member) -> another member trained
        for p in params:
            reg = tree.registering(p)
            if reg is None:
                continue
            child = reg[0]
            for up in tree.ancestors(reg[0]):
                if isinstance(up, (torch.nn.ModuleList, torch.nn.ModuleDict)) and len(up) >= 2:
                    key = (id(up), id(child))
                    if key not in verdicts:
                        verdicts[key] = any(q in self.reached for c in up.children() if c is not child
                                            for q in c.parameters())
                    if verdicts[key]:
                        out.add(id(p))
                        break
                child = up
        return out

    # ---- describe: names and words ----------------------------------------------------------------
    def describe(self, d: Detection, event: Any, ctx: RuleContext) -> Finding | None:
        if "finding" in d.facts:  # a None read described at the read, failed on since
            return replace(d.facts["finding"], before_crash=False)
        if d.message.startswith("read-none-"):
            finding = self._none_read_finding(ctx, d)
            if d.facts["now"]:
                return finding
            # kept until the guard closes: reported only if the program fails on the None
            self.none_read_finding = (weakref.ref(d.subject), d.facts["site"], self.backwards, finding)
            return None
        if d.message == "idle-step":
            return self._idle_step(ctx, event, d.facts["params"])
        if d.message == "frozen-after-optimizer":
            return self._frozen_later(ctx, event, d.facts["params"])
        if d.message in ("cut-by-op", "wrong-optimizer"):
            return self._cut_finding(ctx, event, d)
        return self._unreached_finding(ctx, event, d)

    def _none_read_finding(self, ctx: RuleContext, d: Detection) -> Finding:
        """The finding for a `.grad` read as None that the program fails on."""
        p, site, cuts = d.subject, d.facts["site"], d.facts["cuts"]
        subject = _param_subject(ctx, p)
        name = subject.name
        opt = next((o for o in (r() for r, _ in list(self.opt_sites.entries.values())) if o is not None
                    and any(q is p for g in o.param_groups for q in g["params"])), None)
        made = _built_at(self.opt_sites.get(opt)) if opt is not None else None
        args: dict[str, Any] = {}
        if d.message == "read-none-frozen":
            fix = ("give the optimizer only the trainable parameters: "
                   "filter(lambda p: p.requires_grad, model.parameters()), or skip parameters whose "
                   ".grad is None in the step")
        else:
            fix = (f"keep {name or 'the parameter'} on a differentiable path to the loss (use the "
                   "values, not the indices; a soft selection), or skip parameters whose .grad is None")
        if d.message == "read-none-cut":
            args = {"op": describe_op(cuts[0]), "line": cuts[0].site[0].line if cuts[0].site else "?"}
        related = cut_related(ctx, cuts)
        if cuts and cuts[0].site:
            related.append(Related(Role.FIX_AT, None, describe_op(cuts[0]), ctx.loc(cuts[0].site)))
        elif made is not None:
            related.append(Related(Role.FIX_AT, None, "optimizer", made))
        args.update({"fix": fix, "name": display(name, "A parameter")})
        return self.finding(ctx, subject, ctx.loc(site), fix, args, related,
                            before_crash=True, message=d.message)

    def _cut_finding(self, ctx: RuleContext, event: Any, d: Detection) -> Finding:
        params, cuts = d.facts["params"], d.facts["cuts"]
        p = params[0]
        subject = ctx.subject(p, kind="parameter")
        if len(params) > 1 and subject.name:
            label = subject.name.rsplit(".", 1)[0]
            module = _resolve_module(label)
            # a layer built inline in a container (`nn.Sequential(nn.Linear(...), ...)`) has no name
            # of its own: the container's, when all of its parameters are cut as well
            while module is not None and label[-1:] == "]":
                up = label[:label.rfind("[")]
                parent = _resolve_module(up)
                if parent is None or not is_container(parent) or not _covers(parent, params):
                    break
                label, module = up, parent
            # a container that is all of its parent (`critic.value`, the critic's one
            # Sequential of layers): the parent the user names is what gets no gradient (a
            # layer of its own, `ranker.scorer`, keeps its name)
            while module is not None and is_container(module) and "." in label and label[-1:] != "]":
                up = label.rsplit(".", 1)[0]
                parent = _resolve_module(up)
                if parent is None or not _covers(parent, params):
                    break
                label, module = up, parent
            # sibling layers of a named module of the user's, all cut: that module (a layer that
            # holds every one of them keeps its own name)
            up = _parent_label(label) if label[-1:] != "]" else None
            while module is not None and up is not None and not _holds(module, params):
                parent = _resolve_module(up)
                if parent is None or is_container(parent) or not _covers(parent, params):
                    break
                label, module = up, parent
                up = _parent_label(label) if label[-1:] != "]" else None
            if module is not None:
                subject = replace(subject, name=label, kind="module",
                                  created_at=origin_of(module) or subject.created_at)
        name = subject.name
        unnamed = "A parameter"
        if name is None:
            # no name reaches it (a model in a closure's cell): described by its layer, dated
            # by the line that built that layer (issue 29)
            reg = ctx.module_tree(event).registering(p)
            if reg is not None:
                module, attr = reg
                unnamed = (f"A {type(module).__name__} module" if len(params) > 1 else
                           f"Parameter `{attr}` (shape {tuple(p.shape)}) of a {type(module).__name__} module")
                subject = replace(subject, created_at=origin_of(module) or origin_of(p) or subject.created_at)
        first = cuts[0]
        fix = fix_for_cut(first, name or "the parameter")
        line = first.site[0].line if first.site else "?"
        args: dict[str, Any] = {}
        related = cut_related(ctx, cuts)
        if d.message == "wrong-optimizer":
            # The backward before this step reaches none of what the optimizer holds, and trains
            # a model no optimizer holds (a GAN's second optimizer built over the generator
            # again): the cut is the program's own (the D step's fake.detach()), the
            # optimizer's construction is what to fix.
            other, what = _unheld_name(ctx, d.facts["unheld"], ctx.module_tree(event))
            opt_hit = ctx.name_of(event.optimizer)
            opt_name = opt_hit.name if opt_hit else "the optimizer"
            args = {"opt": opt_name, "cut_name": name or "them", "other": other}
            fix = f"build {opt_name} over {what}"
            related = ctx.fix_at(ctx.loc(self.opt_sites.get(event.optimizer)), opt_name, "optimizer") + related
        elif first.site:
            related.append(Related(Role.FIX_AT, None, describe_op(first), ctx.loc(first.site), first.iteration))
        related += [Related(Role.NO_GRADIENT, ctx.name_of(q).name if ctx.name_of(q) else None, None,
                            ctx.subject(q).created_at) for q in params[1:4]]
        args.update({"op": describe_op(first), "line": line, "fix": fix,
                     "name": display(name, unnamed)})
        return self.finding(
            ctx, subject, ctx.loc(event.site), fix, args, related, message=d.message,
            graph=cut_snapshot(ctx, cuts, params, f"GG008: {name or 'parameter'} gets no gradient",
                               entry_site=event.site, entry_op="optimizer.step()"))

    def _unreached_finding(self, ctx: RuleContext, event: Any, d: Detection) -> Finding:
        members: list[torch.Tensor] = d.facts["params"]
        module, attr = d.facts["module"], d.facts["attr"]
        message = d.message
        p = members[0]
        opt_hit = ctx.name_of(event.optimizer)
        opt_name = opt_hit.name if opt_hit else "the optimizer"
        made = ctx.loc(self.opt_sites.get(event.optimizer))
        subject = ctx.subject(p, kind="parameter")
        hit = ctx.name_of(p)
        label = hit.name.rsplit(".", 1)[0] if hit and "." in hit.name else None
        unnamed_desc = None  # the best description of a parameter no name reaches (issue 29)
        if hit is None and module is not None:
            subject = replace(subject, created_at=origin_of(module) or subject.created_at)
            unnamed_desc = (f"parameter `{attr}` (shape {tuple(p.shape)}) of a "
                            f"{type(module).__name__} module that {opt_name} holds" if attr else
                            f"the parameters of a {type(module).__name__} module that {opt_name} holds")
        trained = self._trained_module(members) if d.facts["every"] else None
        part_of = None  # the module whose other parameters do train, by its name
        read_at: list[Related] = []  # where that module's forward reads the parameter
        if trained is not None:
            # the model the loss is computed from is not the one the optimizer holds
            subject = replace(subject, name=trained[0], kind="module",
                              created_at=origin_of(trained[1]) or subject.created_at)
        elif message == "unused-in-module":
            # the parameter is what gets no gradient, and the fix goes where the module's
            # forward reads it
            part_of = label or _module_label(ctx, module)
            subject = replace(subject, created_at=origin_of(p) or subject.created_at)
            try:
                reads = attribute_reads_in_forward(module, attr) if attr else []
            except Exception:  # wording only
                reads = []
            for loc in reads[:2]:
                read_at += ctx.fix_at(loc, f"self.{attr}", "compute with the parameter itself")
        elif label is not None or module is not None:
            # the module the parameters belong to, named as the program names it (for all an
            # optimizer holds, the innermost module registering them all, found by the tree)
            resolved = (_resolve_module(label) if label is not None and not d.facts.get("common")
                        else None)
            owner, owner_name = ((resolved, label) if resolved is not None
                                 else (module, _module_label(ctx, module)))
            if owner_name is not None and owner is not None and _covers(owner, members):
                subject = replace(subject, name=owner_name, kind="module",
                                  created_at=origin_of(owner) or subject.created_at)
        if subject.created_at is None:
            subject = replace(subject, created_at=origin_of(p))
        name = subject.name
        if name is None and unnamed_desc is not None:
            loc = subject.created_at
            name_for_text = unnamed_desc + (f", built at line {loc.line}" if loc else "")
        else:
            name_for_text = None
        args: dict[str, Any] = {"steps": self.UNREACHED_STEPS}
        if message == "optimizer-unreached":
            args["opt"] = opt_name
            fix = (f"build {opt_name} over the parameters of the model the loss is computed "
                   "from, after the model is final (create the model once, then the optimizer)")
        elif message == "inherited-unused":
            args["cls"], args["base"] = d.facts["cls"], d.facts["base"]
            fix = (f"if {args['cls']} should train {name or 'it'}, use it in {args['cls']}.forward; "
                   f"otherwise leave it out of {opt_name} (or freeze it with requires_grad_(False))")
        elif message == "ddp-unused":
            fix = (f"if {name or 'it'} should train, make the forward use it; otherwise freeze "
                   "it with requires_grad_(False) (find_unused_parameters' graph walk costs "
                   "every iteration)")
        elif message == "output-unused":
            fix = (f"if {name or 'that output'} should train, add its output to the loss; "
                   f"otherwise leave it out of {opt_name} or freeze it with requires_grad_(False)")
        elif message == "unused-in-module":
            args["module"] = part_of or f"its {type(module).__name__} module"
            fix = (f"use {name or 'the parameter'} itself in the forward of {args['module']} (not its "
                   f".data, .detach() or a copy), or leave it out of {opt_name} "
                   "(or freeze it with requires_grad_(False))")
        else:
            fix = (f"call {name or ('that module' if name_for_text else 'the module')} in forward, "
                   f"or leave it out of {opt_name} (or freeze it with requires_grad_(False))")
        related = [Related(Role.UNREACHABLE, ctx.name_of(q).name if ctx.name_of(q) else None, None,
                           ctx.subject(q).created_at) for q in members[1:4]] + read_at
        if made is not None:
            related.append(Related(Role.FIX_AT, opt_name, "optimizer", made))
        args.update({"fix": fix,
                     "name": display(name, name_for_text[:1].upper() + name_for_text[1:]
                                     if name_for_text else "A parameter")})
        return self.finding(ctx, subject, ctx.loc(event.site), fix, args,
                            related, message=message,
                            graph=cut_snapshot(ctx, [], members,
                                               f"GG008: {name or 'parameters'} get no gradient",
                                               entry_site=event.site,
                                               entry_op="optimizer.step()"))

    def _frozen_later(self, ctx: RuleContext, event: Any, members: list[torch.Tensor]) -> Finding:
        """Parameters that required grad when the optimizer was given them and were frozen since
        (`requires_grad = False` after the optimizer was built): it still holds them, they get no
        gradient. Often meant (a backbone frozen for a while), so: info."""
        opt_hit = ctx.name_of(event.optimizer)
        opt_name = opt_hit.name if opt_hit else "the optimizer"
        made = ctx.loc(self.opt_sites.get(event.optimizer))
        subject = ctx.subject(members[0], kind="parameter")
        label = subject.name.rsplit(".", 1)[0] if subject.name and "." in subject.name else None
        owner = _resolve_module(label) if label else None
        if owner is not None and _covers_all(owner, members):
            subject = replace(subject, name=label, kind="module",
                              created_at=origin_of(owner) or subject.created_at)
        name = subject.name
        fix = (f"freeze before building {opt_name} and give it only the trainable parameters "
               "(filter(lambda p: p.requires_grad, model.parameters())), or leave "
               f"{name or 'it'} trainable if it should learn")
        related = ctx.fix_at(made, opt_name, "optimizer")
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"opt": opt_name, "fix": fix, "name": display(name, "A parameter")},
                            related, message="frozen-after-optimizer",
                            graph=cut_snapshot(ctx, [], members,
                                               f"GG008: {name or 'parameters'} frozen, still optimized",
                                               entry_site=event.site,
                                               entry_op="optimizer.step()"))

    def _idle_step(self, ctx: RuleContext, event: Any, params: list[torch.Tensor]) -> Finding:
        """A step of an optimizer all of whose parameters are frozen (requires_grad=False) now,
        after a backward, although it updated them at earlier steps: the step does nothing, and
        whatever this iteration's backward was meant to train them with (a regularization term)
        is lost. One finding, named by the module that holds them."""
        opt_hit = ctx.name_of(event.optimizer)
        opt_name = opt_hit.name if opt_hit else "the optimizer"
        groups = _by_module(ctx, params)
        label, members = groups[0]
        subject = ctx.subject(members[0], kind="parameter")
        owner = _owning_module(ctx, params, label)
        if owner is not None:
            subject = replace(subject, name=owner[0], kind="module",
                              created_at=origin_of(owner[1]) or subject.created_at)
        if subject.created_at is None:
            subject = replace(subject, created_at=origin_of(members[0]))
        name = subject.name
        fix = (f"switch {name or 'them'} back to requires_grad=True before the backward this step "
               f"applies (requires_grad({name or 'model'}, True)), or drop this step")
        related = ctx.fix_at(ctx.loc(self.opt_sites.get(event.optimizer)), opt_name, "optimizer")
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"opt": opt_name, "fix": fix, "name": display(name, "A parameter")},
                            related, message="idle-step",
                            graph=cut_snapshot(ctx, [], members[:8],
                                               f"GG008: {name or 'parameters'} frozen at this step",
                                               entry_site=event.site, entry_op="optimizer.step()"))

    def _trained_module(self, params: list[torch.Tensor]) -> tuple[str, Any] | None:
        """The user's module whose parameters the last backward reached, when the optimizer's
        parameters are none of them (an optimizer over another instance of the model). While
        a module the user still names holds the optimizer's parameters (a gate the forward never
        calls, the loss computed from a network of another make), the model the loss reaches
        stands for it only when its parameters have the same shapes; otherwise the finding names
        what the optimizer holds. Wording only (one owner look-up)."""
        reached = {id(v) for v in (r() for r in self.last_leaves) if v is not None}
        if not reached:
            return None
        held = {id(p) for p in params}
        shapes = sorted(tuple(p.shape) for p in params)
        still_named = find_owner(params[0]) is not None if params else False
        for name, module, _fr in user_modules():
            ps = list(module.parameters())
            if ps and any(id(q) in reached for q in ps) and not any(id(q) in held for q in ps) and (
                    not still_named or sorted(tuple(q.shape) for q in ps if q.requires_grad) == shapes):
                return name, module
        return None


def _told_key(cuts: list, event: Any) -> tuple:
    """What makes a cut finding the same report: the cutting op and its line, the step's line."""
    c = cuts[0]
    cut_at = (c.site[0].file, c.site[0].line) if c.site else None
    step_at = (event.site[0].file, event.site[0].line) if event.site else None
    return (describe_op(c), cut_at, step_at)


def _common_module(tree: ModuleTree, params: list[torch.Tensor]) -> torch.nn.Module | None:
    """The innermost module whose registered descendants hold every one of `params`."""
    common: list[torch.nn.Module] | None = None
    for p in params:
        reg = tree.registering(p)
        if reg is None:
            return None
        chain = tree.chain_to(reg[0])
        if common is None:
            common = chain
            continue
        n = 0
        while n < min(len(common), len(chain)) and common[n] is chain[n]:
            n += 1
        common = common[:n]
        if not common:
            return None
    return common[-1] if common else None


def _overridden_user(tree: ModuleTree, module: torch.nn.Module | None,
                     attr: str | None) -> tuple[str, str] | None:
    """(class, base class) when, at `module`'s attribute `attr` or at one of the modules above it
    (each by the key its parent registers it under), the live class overrides a base class's
    `forward` that reads that attribute and its own `forward` does not. Read from the classes'
    compiled code (the names each forward's bytecode loads), never from the program's source."""
    if module is None or attr is None:
        return None
    # (module, attr), then each module above with the key it registers the one below under
    steps = [(module, attr)] + [tree.parent[id(c)] for c in reversed(tree.chain_to(module)[1:])]
    for owner, key in steps:
        cls = type(owner)
        live = getattr(cls.forward, "__code__", None)
        if live is None or key in live.co_names:
            continue
        for base in cls.__mro__[1:]:
            if base.__module__.split(".")[0] == "torch":
                break  # nn.Module's own forward, or a library's: not the program's base class
            fwd = base.__dict__.get("forward")
            code = getattr(fwd, "__code__", None)
            if code is None or code is live:
                continue
            if key in code.co_names:
                return cls.__name__, base.__name__
            break  # the nearest base that defines forward is the one overridden
    return None


def _by_registering(tree: ModuleTree, params: list[torch.Tensor]) -> list[list[torch.Tensor]]:
    """`params` grouped by the module that registers each (one group per layer), a parameter no
    module registers in a group of its own; in the order of `params`."""
    groups: dict[int, list[torch.Tensor]] = {}
    for p in params:
        reg = tree.registering(p)
        groups.setdefault(id(reg[0]) if reg is not None else id(p), []).append(p)
    return list(groups.values())


def _by_cut_module(tree: ModuleTree | None, cut: list[tuple[torch.Tensor, list]]
                   ) -> list[tuple[list[torch.Tensor], list]]:
    """Cut parameters grouped by module, from the module tree: when every trainable parameter of
    a layer lost its gradient to the same cut, one group for the layer; when every layer of a
    container (`model.layers[0]`, `[1]`, ...) or of a submodule (`model.block.theta`,
    `model.block.phi`) is so cut, one group for that module. A model's root is never merged
    into (its layers are what the user names)."""
    if tree is None or len(cut) < 2:
        return [([p], cuts) for p, cuts in cut]
    by_layer: dict[tuple[int, Any], tuple[Any, list[tuple[torch.Tensor, list]]]] = {}
    for p, cuts in cut:
        reg = tree.registering(p)
        key = (id(reg[0]), cuts[0].index) if reg is not None else (id(p), None)
        by_layer.setdefault(key, (reg[0] if reg is not None else None, []))[1].append((p, cuts))
    out: list[tuple[list[torch.Tensor], list]] = []
    whole: dict[tuple[int, Any], tuple[Any, list[tuple[list[torch.Tensor], list]]]] = {}
    for key, (module, items) in by_layer.items():
        members = [p for p, _ in items]
        if module is None or len(members) < 2 or not _covers(module, members):
            out.extend(([p], cuts) for p, cuts in items)
            continue
        parent = tree.parent_of(module)
        if parent is not None and (is_container(parent) or not tree.is_root(parent)):
            whole.setdefault((id(parent), key[1]), (parent, []))[1].append((members, items[0][1]))
        else:
            whole.setdefault(key, (None, []))[1].append((members, items[0][1]))
    for parent, groups in whole.values():
        members = [p for ms, _ in groups for p in ms]
        if parent is not None and len(groups) > 1 and _covers(parent, members):
            out.append((members, groups[0][1]))
        else:
            out.extend(groups)
    return out


def _module_label(ctx: RuleContext, module: Any) -> str | None:
    """The user's name of a module (`model.encoder`), when a name reaches it."""
    if module is None:
        return None
    hit = ctx.name_of(module)
    return hit.name if hit is not None else None


def _unheld_name(ctx: RuleContext, unheld: list[torch.nn.Parameter], tree: ModuleTree) -> tuple[str, str]:
    """(how the sentence names the module that trained though no optimizer holds it, what the
    fix builds the optimizer over): `netD` and `netD.parameters()`, or, when no name reaches it,
    its class and the line that built it."""
    hit = ctx.name_of(unheld[0])
    label = hit.name.rsplit(".", 1)[0] if hit and "." in hit.name else None
    owner = _owning_module(ctx, unheld, label)
    if owner is not None:
        return owner[0], f"{owner[0]}.parameters()"
    if label is not None:
        return label, f"{label}.parameters()"
    reg = tree.registering(unheld[0])
    module = tree.root_of(reg[0]) if reg is not None else None
    if module is None:
        return "parameters no optimizer holds", "the parameters the backward trains"
    loc = origin_of(module)
    what = f"a {type(module).__name__} module" + (f" (built at line {loc.line})" if loc else "")
    return what, f"the parameters of {what}"


def _built_at(site: Any) -> Any:
    """Where the user builds an optimizer: the first frame outside an `__init__` (a user-written
    optimizer's constructor hands its parameters on from inside `__init__`)."""
    if not site:
        return None
    fr = next((f for f in site if f.function != "__init__"), site[0])
    return SourceLoc.from_frame(fr)


def _param_subject(ctx: RuleContext, p: torch.Tensor) -> Any:
    """A parameter's subject named by its path in the user's model (`first_model.fc.weight`), not
    by a loop variable that happens to hold it (`for param in model.parameters()`), and dated by
    the line that builds its layer."""
    subject = ctx.subject(p, kind="parameter")
    owner = find_owner(p)
    if owner is not None and owner.how == "registered":
        subject = replace(subject, name=owner.path, created_at=origin_of(p) or subject.created_at)
    return subject


def _owning_module(ctx: RuleContext, params: list[torch.Tensor], label: str | None
                   ) -> tuple[str, torch.nn.Module] | None:
    """The outermost user module whose parameters are exactly `params` (`discriminator_img`, not
    its `convs[0]`), with its name: climbed from the module of `label` while the enclosing module
    holds nothing else; else a module the user's frames name directly that holds exactly them."""
    want = {id(p) for p in params}
    best = None
    if label:
        parts = label.split(".")
        for k in range(len(parts), 0, -1):
            cand = ".".join(parts[:k])
            module = _resolve_module(cand)
            if module is None:
                continue
            if {id(q) for q in module.parameters()} == want:
                best = (cand, module)
            elif best is not None:
                break
    if best is None:
        for name, module, _fr in user_modules():
            if {id(q) for q in module.parameters()} == want:
                return name, module
    return best


def _parent_label(label: str) -> str | None:
    """The name of the module holding the one `label` names, when that is itself a named
    submodule (`model.block` for `model.block.theta`, `model.layers` for `model.layers[2]`);
    None for a top-level name (`model` of `model.fc`: the model itself is not a layer)."""
    if label.endswith("]"):
        return label[:label.rfind("[")]
    up = label.rsplit(".", 1)[0] if "." in label else ""
    return up if ("." in up or "[" in up) else None


def _holds(module: torch.nn.Module, params: list[torch.Tensor]) -> bool:
    """Whether every one of `params` is a parameter of `module` (or of its submodules)."""
    have = {id(q) for q in module.parameters()}
    return all(id(p) in have for p in params)


def _covers_all(module: torch.nn.Module, params: list[torch.Tensor]) -> bool:
    """Whether `params` are all of `module`'s parameters (trainable or not)."""
    have = {id(q) for q in module.parameters()}
    return bool(have) and have <= {id(p) for p in params}


def _covers(module: torch.nn.Module, params: list[torch.Tensor]) -> bool:
    """Whether `params` are all of `module`'s trainable parameters."""
    want = {id(p) for p in params}
    have = {id(q) for q in module.parameters() if q.requires_grad}
    return bool(have) and have <= want


def _resolve_module(label: str) -> Any:
    """The module a user's dotted name (`model.fc`) refers to, when it is one."""
    hit = resolve(label)
    return hit.value if hit is not None and isinstance(hit.value, torch.nn.Module) else None


def _by_module(ctx: RuleContext, params: list[torch.Tensor]) -> list[tuple[str | None, list[torch.Tensor]]]:
    """Group parameters by the module their user name belongs to (`model.fc.weight` -> `model.fc`)."""
    groups: dict[Any, list[torch.Tensor]] = {}
    for p in params:
        hit = ctx.name_of(p)
        name = hit.name if hit else None
        key = name.rsplit(".", 1)[0] if name and "." in name else (name or id(p))
        groups.setdefault(key, []).append(p)
    out = []
    for key, members in groups.items():
        label = key if isinstance(key, str) else None
        out.append((label, members))
    return out

