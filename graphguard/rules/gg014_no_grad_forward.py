"""GG014 no-grad-forward: outputs of a no_grad / inference_mode region reach a trainable path."""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any

import torch

from ..events import AutogradError, BackwardCall, BackwardDone, StepCall, StepDone
from ..lookup.names import resolve
from ..lookup.origins import origin_of
from ..lookup.source import assigned_targets, called_names, enclosing_scope
from ..lookup.returns import rebinding_of
from ..model import Finding, Message, Related, Role, Site, SourceLoc, Subject
from ..capture.gradmode import GradSwitch
from ..capture.graph import summarize
from ..capture.usercode import is_user_object
from .base import Detection, Rule, display
from .context import Evidence, RuleContext, assigned_name
from .shared.nograd import Region, global_switch, region_for, region_of, switch_of_cuts
from .shared.steps import ClosureDeferral

__all__ = ["NoGradForward"]

INFERENCE_SAVE = "Inference tensors cannot be saved for backward"


class NoGradForward(Rule):
    """## What it does
    Finds a forward pass or a helper that ran with autograd off (`@torch.no_grad()`,
    `@torch.inference_mode()`, a `with` block, or `torch.set_grad_enabled(False)` for the whole
    program) whose outputs are then used where gradients are needed: a loss computed under
    `no_grad` from trainable parameters reaches `backward()`, or a tensor made under
    `inference_mode` (a cached rotary table, generated token ids, backbone features) is read by an
    op that must save it for the backward. It names the tensor, the line that made it, and the
    decorator, `with` line or global switch where the fix goes.

    ## Why is this bad?
    Under `no_grad` the parameters get no gradient: `backward()` fails with "element 0 of tensors
    does not require grad". A tensor made under `inference_mode` cannot be saved for backward:
    PyTorch raises "Inference tensors cannot be saved for backward" at the op that reads it, often
    far from the `inference_mode` that made it (an evaluation that filled a cache). A gradient
    taken inside `with torch.enable_grad():` (a Jacobian, forces from an energy) in code that runs
    under `inference_mode` (a test loop) fails too: `enable_grad` lifts `no_grad`, not inference
    mode, so the tensor has no history.

    ## Example
    ```python
    @torch.inference_mode()
    def evaluate(self):
        return self.loss(batch).item()      # fills self.cos_cached with an inference tensor

    loss = self.loss(batch)                 # training reads self.cos_cached: PyTorch raises
    ```

    ## Use instead
    ```python
    @torch.no_grad()                        # normal tensors, usable by autograd later
    def evaluate(self):
        return self.loss(batch).item()
    ```
    Or `.clone()` the tensor outside inference mode before autograd uses it; compute a training
    loss outside any `no_grad` block.

    It also fires when only part of the model runs under the user's `no_grad` block or decorator
    and the loss still trains the rest: a projection head computed inside `with torch.no_grad():`
    for one side of a contrastive loss, an encoder wrapped in no_grad by mistake. Backward runs,
    the optimizer steps, and the parameters behind the region never get a gradient. It fires at
    the `optimizer.step()` that holds them, naming the module and the region.

    ## Known problems
    A tensor made under `inference_mode` is found when an op refuses to save it: graphguard
    reports in place of PyTorch's error, before it reaches the program (the op is not applied).
    The line that made it is known when the guard recorded it (the first iterations).
    """

    code = "GG014"
    slug = "no-grad-forward"
    severity = "error"
    summary = "a forward or helper run under no_grad / inference_mode feeds a trainable path"
    # NOTE [GG014 stories]: four, told by what the run recorded: an inference tensor an op must
    # save (AutogradError), a loss with no graph because it was computed with grad mode off, one
    # with no graph because it is an inference tensor (BackwardCall), parameters cut by one of
    # the user's no-grad regions while the rest trains (at the step). The region named in the
    # sentence is found from the recorded switch (or, for a switch made before the guard, the
    # source): wording only.
    messages = (
        Message("inference-saved", "error",
                "{name} is an inference tensor, and `{op}` at line {line} needs to save it for the "
                "backward (PyTorch refuses: Inference tensors cannot be saved for backward); it was "
                "made under {region}. Fix: {fix}",
                "an op that must save a tensor for backward reads one made under inference_mode"),
        Message("loss-under-no-grad", "error",
                "{name} was computed from trainable parameters with grad mode off, so backward() "
                "has no graph to run; `{op}` at line {line} ran with autograd off{region}. Fix: {fix}",
                "backward from a loss computed under no_grad (a decorator, a with block, a global "
                "switch)"),
        Message("inference-loss", "error",
                "{name} is an inference tensor, so backward() / autograd.grad() has no graph to "
                "run; it was made under {region}, which `torch.enable_grad()` does not turn off. "
                "Fix: {fix}",
                "backward or autograd.grad from a tensor made under inference_mode (enable_grad "
                "inside it does not lift it)"),
        Message("part-under-no-grad", "error",
                "{name} gets no gradient{others}: its output is computed with autograd off and "
                "still feeds the loss that trains the rest of the model; `{op}` at line {line} ran "
                "with autograd off ({region}). Fix: {fix}",
                "optimized parameters left without gradient at a step because one of the user's "
                "no_grad regions cut them from a loss that trains the rest"),
    )
    events = (AutogradError, BackwardCall, BackwardDone, StepCall, StepDone)
    # quiet: every root has history
    quiet_skip = (BackwardCall,)
    # a region that cuts part of the model is judged at steps: a sample of them is enough (it
    # shows in the recorded iterations, where the cuts are known)
    skim_skip = (StepCall, StepDone, BackwardDone)

    def __init__(self) -> None:
        self.root_cuts: set[int] = set()  # cuts behind the roots of the backwards since the last step
        self.closures = ClosureDeferral()
        self.reported_regions: set[tuple[str, int]] = set()  # switch keys already reported
        self.reached_ids: set[int] = set()  # ids of the leaves the backwards since the last step reached

    # ---- detect: from the recorded cuts, switches and tensors -----------------------------------
    def detect(self, event: Any, ev: Evidence) -> list[Detection]:
        if isinstance(event, BackwardDone):
            if ev.recording_details():
                for r in event.call.roots[:8]:
                    self.root_cuts.update(c.index for c in ev.cuts_behind(r))
                # the leaves this backward reached: one whose .grad was cleared since is not cut
                self.reached_ids.update(id(v) for v in event.call.scan.leaves[:4096])
            return []
        if isinstance(event, (StepCall, StepDone)):
            if self.closures.defer(event):
                return []
            try:
                return self._part_under_no_grad(event, ev)
            finally:
                self.root_cuts.clear()
                self.reached_ids.clear()
        if isinstance(event, AutogradError):
            if event.where == "op" and str(event.error).startswith(INFERENCE_SAVE):
                return self._inference(event)
            return []
        return self._no_grad_loss(event, ev)

    @staticmethod
    def _inference(event: AutogradError) -> list[Detection]:
        """A tensor made under inference_mode read by an op that saves it: PyTorch's refusal,
        reported at the op (the first inference tensor among its inputs)."""
        for t in event.tensors:
            if isinstance(t, torch.Tensor) and t.is_inference():
                return [Detection("inference-saved", t)]
        return []

    def _part_under_no_grad(self, event: Any, ev: Evidence) -> list[Detection]:
        """At a step: optimized parameters that require grad and got no gradient, whose only cuts
        on the path to this step's losses ran in one of the user's no-grad regions (one recorded
        switch). One detection per region (GG008 leaves these parameters to it)."""
        if not self.root_cuts or not ev.recording_details() or event.optimizer is None:
            return []
        by_region: dict[tuple[str, int], tuple[GradSwitch, list[torch.Tensor], list[int]]] = {}
        for group in event.optimizer.param_groups:
            for p in group["params"]:
                if not isinstance(p, torch.Tensor) or not p.requires_grad or p.grad is not None \
                        or id(p) in self.reached_ids:
                    continue
                cuts = [c for c in ev.cuts_for_leaf(p) if c.index in self.root_cuts]
                switch = switch_of_cuts(cuts)
                if switch is None or not switch.off:
                    continue
                if switch.key in self.reported_regions:
                    continue
                entry = by_region.setdefault(switch.key, (switch, [], []))
                entry[1].append(p)
                entry[2].append(max(c.index for c in cuts))
        out = []
        for key, (switch, params, last) in list(by_region.items())[:4]:
            self.reported_regions.add(key)
            # named by the layer whose output leaves the region (its latest cut: the projection
            # computed last inside the block), the others are listed
            order = sorted(range(len(params)), key=lambda k: -last[k])
            params = [params[k] for k in order]
            cuts = sorted((c for c in ev.cuts_for_leaf(params[0]) if c.index in self.root_cuts),
                          key=lambda c: c.index)
            out.append(Detection("part-under-no-grad", params[0],
                                 {"switch": switch, "params": params, "cuts": cuts}))
        return out

    @staticmethod
    def _no_grad_loss(event: BackwardCall, ev: Evidence) -> list[Detection]:
        """Roots without grad whose history ended with grad mode off (a recorded cut under a
        switch, an inference tensor, or backward itself running with autograd off)."""
        out = []
        for root in event.roots:
            if not isinstance(root, torch.Tensor) or root.requires_grad:
                continue
            cuts = [c for c in ev.cuts_behind(root) if c.no_grad]
            inference = root.is_inference()
            if cuts:
                cut = cuts[-1]
                op, cut_site, cut_it = cut.op, cut.site, cut.iteration
            elif inference:
                # made under inference_mode, which records nothing and which a
                # `torch.enable_grad()` inside does not lift: the backward (or autograd.grad)
                # runs in that same region, around the code that made the tensor
                op, cut_site, cut_it = "inference_mode", event.site, ev.iteration
            elif not torch.is_grad_enabled() and root.grad_fn is None and not ev.cuts_behind(root):
                # not recorded (light mode), but backward itself runs with grad mode off: the
                # loss it starts from was computed in the same region
                op, cut_site, cut_it = "backward", event.site, ev.iteration
            else:
                continue  # cut by an op (argmax, .item()): GG009 explains those
            switch = cuts[-1].switch if cuts else ev.grad_switch()
            if cuts and cuts[-1].checkpointed and (switch is None or not switch.user):
                continue  # only a reentrant checkpoint's own forward ran with grad off: GG015's
            out.append(Detection("inference-loss" if inference else "loss-under-no-grad", root,
                                 {"op": op, "cut_site": cut_site, "cut_it": cut_it,
                                  "switch": switch}))
        return out

    # ---- describe: the region as written, names, fixes ----------------------------------------
    def describe(self, d: Detection, event: Any, ctx: RuleContext) -> Finding | None:
        if d.message == "inference-saved":
            return self._describe_inference(d, event, ctx)
        if d.message == "part-under-no-grad":
            return self._describe_part(d, event, ctx)
        return self._describe_no_grad_loss(d, event, ctx)

    def _describe_inference(self, d: Detection, event: AutogradError, ctx: RuleContext) -> Finding:
        t = d.subject
        origin = ctx.inference_origin(t)
        base, site = origin if origin is not None else (t, None)
        switch = ctx.inference_switch(base)
        region = region_for(switch, site)
        if region is None and switch is None and site:
            region = region_of(site)  # entered before the guard started: read the source
        name, made = _tensor_name(base, site, region)
        kind = "tensor"
        rebound = None
        if name is None and region is not None and region.kind == "decorator":
            name, kind = region.function, "call"
            # reached through another name (`model.backbone.forward = partial(...)`): that
            # attribute is what the training code calls, and the line that installed it
            frames = list(site or ())
            k = frames.index(region.frame) if region.frame in frames else -1
            caller = frames[k + 1] if 0 <= k < len(frames) - 1 else None
            files = list(dict.fromkeys(fr.file for fr in frames))
            rebound = rebinding_of(region.function, files, caller) if caller is not None else None
            if rebound is not None:
                name = rebound.function
        if name is None:
            hit = ctx.name_of(t)
            name = hit.name if hit else None
        subject = Subject(name, kind, summarize(base), made or (ctx.loc(site) if site else None),
                          None)
        loc = ctx.loc(event.site)
        api = region.api if region else "torch.inference_mode()"
        related = []
        if site:
            related.append(Related(Role.CREATED_AT, name, "inference_mode", ctx.loc(site)))
        related.append(Related(Role.NEEDED_BY, None, event.op, loc, ctx.iteration))
        if region is not None:
            related.append(Related(Role.FIX_AT, region.function, api, region.line))
        if rebound is not None:
            related.append(Related(Role.REBOUND_AT, name, region.function, rebound))
        fix = _fix(region, "inference", name)
        return self.finding(ctx, subject, loc, fix,
                            {"name": f"The output of `{name}`" if kind == "call" and name
                             else display(name, "A tensor"),
                             "op": event.op, "line": loc.line if loc else "?",
                             "region": (f"`{api}` ({_region_words(region)})" if region
                                        else "torch.inference_mode()"),
                             "fix": fix},
                            related, message="inference-saved")

    def _describe_part(self, d: Detection, event: Any, ctx: RuleContext) -> Finding:
        params, cuts, switch = d.facts["params"], d.facts["cuts"], d.facts["switch"]
        region = region_for(switch, cuts[0].site)
        assert region is not None  # detect kept only the user's switches that turn autograd off
        hit = ctx.name_of(params[0])
        label = _module_label(hit.name if hit else None)
        module = resolve(label).value if label and resolve(label) is not None else None
        subject = ctx.subject(params[0], kind="parameter", hit=hit)
        if isinstance(module, torch.nn.Module) and _layer_is_subject(module, params):
            subject = replace(subject, name=label, kind="module",
                              created_at=origin_of(module) or subject.created_at)
        name = subject.name
        first = cuts[0]
        cut_loc = ctx.loc(first.site)
        others = len(params) - 1
        fix = (f"compute {display(name, 'it')} outside `{region.api}` ({_region_words(region)}) "
               "if it should train; if it is meant frozen, freeze it with requires_grad_(False) "
               "and leave it out of the optimizer")
        related = [Related(Role.CUT_BY, name, first.op, cut_loc, first.iteration),
                   Related(Role.FIX_AT, region.function, region.api, region.line)]
        related += [Related(Role.NO_GRADIENT, ctx.name_of(q).name if ctx.name_of(q) else None, None,
                            ctx.subject(q).created_at) for q in params[1:4]]
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"name": display(name, "A parameter"),
                             "others": f" (nor {others} more parameter(s))" if others else "",
                             "op": first.op, "line": cut_loc.line if cut_loc else "?",
                             "region": _region_words(region), "fix": fix},
                            related, message="part-under-no-grad")

    def _describe_no_grad_loss(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        root = d.subject
        op, cut_site, cut_it, switch = (d.facts["op"], d.facts["cut_site"], d.facts["cut_it"],
                                        d.facts["switch"])
        inference = d.message == "inference-loss"
        region = region_for(switch, cut_site)
        if region is None and switch is None:
            # autograd was turned off before the guard started: find the switch in the source
            region = region_of(cut_site, "inference_mode" if inference else None)
            if region is None:
                region = global_switch([fr.file for fr in cut_site or ()])
        subject = ctx.subject(root)
        made = subject.created_at
        if subject.name and subject.name.endswith("]") and made is not None:
            # `losses["loss"]` of `outputs, losses = self.process_batch(inputs)`: name the
            # variable the no-grad line assigned, as written there
            base = subject.name.split("[", 1)[0]
            if base in assigned_targets(made.file, made.line):
                subject = replace(subject, name=base)
        if region is not None and region.kind == "global":
            # the whole program runs with autograd off: the switch is what to name
            call = region.api.split("(")[0]
            subject = Subject(call, "call", region.api, region.line, None)
        loc = ctx.loc(event.site)
        cut_loc = ctx.loc(cut_site)
        related = [Related(Role.CUT_BY, subject.name, op, cut_loc, cut_it)]
        passed = _called_argument(region)
        if passed is not None:
            # the forward ran inside a callable the decorated function was given (an
            # optimizer's `step(closure)`): that call needs grad mode back, the decorator
            # stays for what the function itself does (in-place updates of the weights)
            call_at = SourceLoc.from_frame(region.frame)
            related.append(Related(Role.FIX_AT, passed, "torch.enable_grad()", call_at))
            fix = (f"call `{passed}` with grad mode on inside `{region.function}`: "
                   f"`with torch.enable_grad(): {call_at.code}` (line {call_at.line}), as "
                   f"torch's own optimizers do; keep `@{region.api}` for the rest of `{region.function}`")
        else:
            if region is not None:
                related.append(Related(Role.FIX_AT, region.function, region.api, region.line))
            fix = _fix(region, "enable_grad" if inference else "no_grad", subject.name)
        args: dict[str, Any] = {"name": display(subject.name, "The loss"), "fix": fix}
        if inference:
            args["region"] = (f"inference mode ({_region_words(region)})" if region
                              else "torch.inference_mode()")
        else:
            args.update({"op": op, "line": cut_loc.line if cut_loc else "?",
                         "region": f" ({_region_words(region)})" if region else ""})
        return self.finding(ctx, subject, loc, fix, args, related, message=d.message)


def _layer_is_subject(module: torch.nn.Module, cut: list[torch.Tensor]) -> bool:
    """Whether a finding about parameters left without gradient names their module rather than
    the parameter: a library's layer, torch's or another's (its weight and bias are the layer's), or a module of the user's
    with more than one of its own parameters cut. A parameter the user made and assigned by hand in
    a module of theirs (`self._kernel = nn.Parameter(...)`) is named itself."""
    if not is_user_object(module):
        return True
    own = {id(p) for p in module.parameters(recurse=False)}
    return sum(id(p) in own for p in cut) > 1 or not own


def _module_label(name: str | None) -> str | None:
    """`model.bert_l2` for `model.bert_l2.weight`."""
    return name.rsplit(".", 1)[0] if name and "." in name else name


def _tensor_name(t: Any, site: Site | None, region: Region | None) -> tuple[str | None, SourceLoc | None]:
    """The user's name for a tensor made in a no-grad region: a name assigned along its creation
    frames (inside out, up to the region's frame) that still holds it, else the name the
    creation line assigns the call's result to."""
    frames = list(site or ())
    if region is not None and region.frame in frames:
        frames = frames[:frames.index(region.frame) + 1]
    for fr in frames:
        for target in assigned_targets(fr.file, fr.line):
            hit = resolve(target)
            if hit is not None and hit.value is t:
                return target, SourceLoc.from_frame(fr)
    for fr in frames[:1]:
        name = assigned_name(fr)
        if name is not None:
            return name, SourceLoc.from_frame(fr)
    return None, None


def _called_argument(region: Region | None) -> str | None:
    """The callable a decorated no-grad function was given and calls on the region's line
    (`closure` in `step(self, closure=None)`: `loss = closure()`), or None. The loss was computed
    inside that call, so grad mode belongs back on around it, not off the whole function."""
    if region is None or region.kind != "decorator" or region.frame is None:
        return None
    fr = region.frame
    scope = enclosing_scope(fr.file, fr.line)
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    a = scope.args
    params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    params.discard("self")
    for name in called_names(fr.file, fr.line):
        if name in params:
            return name
    return None


def _region_words(region: Region | None) -> str:
    if region is None:
        return "autograd off"
    if region.kind == "decorator":
        return f"the decorator of `{region.function}` at line {region.line.line}"
    if region.kind == "with":
        return f"the `with` block at line {region.line.line}"
    return f"switched off for the whole program at {region.line.short()}"


def _fix(region: Region | None, why: str, name: str | None) -> str:
    if region is None:
        return ("compute it with autograd on (outside torch.no_grad() / torch.inference_mode()), "
                "or `.clone()` it outside inference mode before autograd uses it")
    at = f"line {region.line.line}"
    if region.kind == "global":
        return (f"remove `{region.api}` ({region.line.short()}), or turn it back on with "
                "`torch.set_grad_enabled(True)` / `with torch.enable_grad():` around the training step")
    if why == "inference":
        what = (f"`@torch.no_grad()` instead of `@{region.api}`" if region.kind == "decorator"
                else f"`with torch.no_grad():` instead of `with {region.api}:`")
        return (f"use {what} ({at}), so its outputs are normal tensors, or `.clone()` "
                f"{display(name)} outside it before training reads it")
    if why == "enable_grad":
        # gradients are wanted inside (a Jacobian, forces from an energy): the region may stay,
        # as torch.no_grad(), which a `torch.enable_grad()` block inside does lift
        where = f"`@{region.api}`" if region.kind == "decorator" else f"`with {region.api}:`"
        return (f"run that code under `torch.no_grad()` instead of {where} ({at}) so that "
                "`torch.enable_grad()` inside records the graph, or outside the region")
    if region.kind == "decorator":
        return f"remove `@{region.api}` from `{region.function}` ({at}) for the training call"
    return f"compute the loss and call backward() outside `with {region.api}:` ({at})"
