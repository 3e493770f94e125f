"""GG005 inplace-saved-tensor: a tensor saved for backward was changed in place before backward."""
from __future__ import annotations

import dataclasses
import re
import weakref
from typing import Any, Iterator

import torch

from torch.autograd.function import BackwardCFunction

from ..capture.graph import summarize
from ..lookup.assigned import assigned_target
from ..lookup.flags import inplace_flag_source
from ..lookup.names import find_names, find_name
from ..lookup.source import assigned_targets, target_lines
from ..capture.state import InplaceRecord, Packed
from ..capture.saved import SavedHit, find_modified_saved, modifying_write, shares_saved, storage_key
from .shared.snapshot import call_node, snapshot_from_scan
from .context import Evidence, RuleContext, assigned_name
from ..events import BackwardCall, StepCall
from ..model import Finding, Message, Related, Role, Site, Subject
from .shared.inplace import (describe_inplace, flag_op_forms, is_inplace_flag_op, line_code, out_of_place,
                       written_name)
from .base import Detection, Rule, display

__all__ = ["InplaceSavedTensor"]

MAX_REPORTED = 4  # findings per backward (one per line that changed saved tensors)


def node_op(node: Any) -> str:
    """`SigmoidBackward0` -> `sigmoid`, `NativeLayerNormBackward0` -> `native_layer_norm`."""
    base = re.sub(r"Backward\d*$", "", type(node).__name__)
    return re.sub(r"(?<!^)(?=[A-Z])", "_", base).lower() or type(node).__name__


class InplaceSavedTensor(Rule):
    """## What it does
    Before each backward, checks whether a tensor that an op of this graph saved for its gradient
    (`sigmoid`, `tanh` and `exp` save their output; `mul` and `linear` save their inputs) has been
    changed in place since: `x += ...` after a branch used `x`, `nn.ReLU(inplace=True)` or
    `nn.Dropout(inplace=True)` right after an op that saves its output, slice assignment into an
    activation, or `optimizer.step()` between a forward and a second backward that needs the old
    weights. It names the tensor, the op that saved it and the in-place op that changed it.

    ## Why is this bad?
    The gradient would be computed from the changed value. PyTorch refuses with "one of the
    variables needed for gradient computation has been modified by an inplace operation", which
    names a shape and a version number, not the line.

    ## Example
    ```python
    h = torch.sigmoid(self.fc1(x))     # sigmoid saves its output for the backward
    h = self.drop(h)                   # nn.Dropout(inplace=True) overwrites it
    ```

    ## Use instead
    ```python
    h = torch.sigmoid(self.fc1(x))
    h = self.drop(h)                   # nn.Dropout(p) without inplace=True
    ```
    For a second loss on the same forward, call both backward passes (or one on the summed loss)
    before `optimizer.step()`, or run the forward again after the step. The tensor of the old
    forward is named as the line that made it writes it (`td_error`), also when the loss reads it
    under a helper's parameter name (`td` in `actor.learn(s, a, td_error)`).

    ## Known problems
    The op that saved the tensor and the in-place op are named from the guard's recording (the
    first iterations, and again after any error finding); otherwise the finding names the node
    type and points at the backward call. Writes through `.data` are invisible to autograd and are
    not reported (PyTorch does not notice them either).
    """

    code = "GG005"
    slug = "inplace-saved-tensor"
    severity = "error"
    summary = "a tensor saved for backward was modified in place before backward"
    # three stories of what changed the saved tensor: an optimizer's step (the forward reused
    # after it), an in-place op the guard recorded, or a write made while it was not recording
    messages = (
        Message("modified-by-step", "error",
                "{name} was saved for the backward by {saved_at}, then {step} at line {line} "
                "updated it in place{others}; the backward at line {backward_line} needs the saved "
                "value and would fail. {fix}",
                "optimizer.step() updated a weight that a later backward of the same forward needs"),
        Message("modified-in-place", "error",
                "{name} was saved for the backward by {saved_at}, then changed in place by {op} at "
                "line {line}{others}; the backward at line {backward_line} needs the saved value "
                "and would fail. {fix}",
                "an in-place op (`+=`, `[...] =`, inplace=True) changed a tensor saved for backward"),
        Message("modified-unseen", "error",
                "{name} was saved for the backward by {saved_at}, then changed in place by a line "
                "the guard was not recording (it was saved at version {saved_version} and is now at "
                "version {version}){others}; the backward at line {backward_line} needs the saved "
                "value and would fail. {fix}",
                "a tensor saved for backward was changed in place where the guard was not recording"),
    )
    events = (BackwardCall, StepCall)
    # quiet: no saved tensor was found changed
    quiet_skip = (BackwardCall,)
    # A step only notes where each optimizer steps (`_note_step`); a skimmed one leaves the last
    # judged step's line, which is the same line in a training loop, and the skimmed step then
    # costs nothing (its site is not looked up for this rule).
    skim_skip = (StepCall,)

    def __init__(self) -> None:
        # id(optimizer) -> (a weak reference to it, the site of its last judged step, iteration)
        self._steps: dict[int, tuple[Any, Site, int]] = {}

    def detect(self, event: BackwardCall | StepCall, ev: Evidence) -> Iterator[Detection]:
        if isinstance(event, StepCall):
            self._note_step(event, ev)
            return
        modified = ev.modified_saved()
        if not modified or event.scan is None:
            return  # the usual case: nothing saved was changed since it was saved
        hits = find_modified_saved(event.scan.nodes, modified)
        if not hits:
            return  # changed tensors belong to graphs this backward does not reach
        groups: dict[Any, list[tuple[SavedHit, InplaceRecord | None]]] = {}
        for hit in hits:
            stamp = ev.stamp(event.scan.nodes[hit.index])
            # Unstamped: saved while the guard was not recording, so only a write of this
            # iteration can be the one that changed it.
            since = stamp.iteration if stamp is not None else ev.iteration
            write = modifying_write(ev.inplace_writes(), hit.packed, since) \
                or self._step_write(ev, hit.packed, stamp.iteration if stamp is not None else None)
            key = (write.site[0].file, write.site[0].line) if write and write.site else None
            groups.setdefault(key, []).append((hit, write))
        for group in list(groups.values())[:MAX_REPORTED]:
            hit, write = group[0]
            if write is None or not write.site:
                message = "modified-unseen"
            elif write.in_step and _optimized_param(ev, hit.packed) is not None:
                # an optimizer's own update of a weight it holds (recorded inside its step, at
                # the user's `.step()` line; GradScaler's too)
                message = "modified-by-step"
            else:
                message = "modified-in-place"
            yield Detection(message, hit, {"group": group})

    def describe(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        return self._finding(ctx, event, d.facts["group"], d.message)

    def _finding(self, ctx: RuleContext, event: BackwardCall,
                 group: list[tuple[SavedHit, InplaceRecord | None]], message: str) -> Finding:
        hit, write = group[0]
        packed = hit.packed
        node = event.scan.nodes[hit.index]
        stamp = ctx.stamp(node)
        saved_site: Site = stamp.site if stamp is not None else packed.site
        # Packed.op names the user-level call (`linear`, `sigmoid`); trust it when it was recorded
        # for this very node, else name the node's own op.
        saved_op = _saving_op(node, packed, stamp)
        param = _optimized_param(ctx, packed)
        name, subject = self._subject(ctx, hit, write, saved_site, param)
        bw = ctx.loc(event.site)
        saved_loc = ctx.loc(saved_site)
        mod_loc = ctx.loc(write.site) if write is not None else None
        # detect chose the story: an optimizer's own update (recorded inside its step) of a weight
        # it holds, an in-place op, or a write the guard did not see
        by_step = message == "modified-by-step"
        opt_name = _optimizer_name(ctx, param) if by_step else None
        others = []  # other tensors the same line changed (a step updates several weights)
        for h, _ in group[1:]:
            other = self._other_name(ctx, h)
            if other and other != name and other not in others:
                others.append(other)
        story = _story_args(packed, write, mod_loc, message, opt_name)
        story["others"] = " (with " + ", ".join(f"`{o}`" for o in others) + ")" if others else ""
        related = [Related(Role.SAVED_AT, name, saved_op.strip("`"), saved_loc,
                           stamp.iteration if stamp else None)]
        if write is not None:
            related.append(Related(Role.MODIFIED_AT, name, write.op, mod_loc, write.iteration))
        related.append(Related(Role.NEEDED_BY, None, "backward", bw, ctx.iteration))
        flag = inplace_flag_source(write.site, write.op, saved_by=saved_op.strip("`")) \
            if write is not None and write.site and is_inplace_flag_op(write.op) else None
        if flag is not None:
            # The offender is the module made in-place (`self.activ = nn.ReLU(inplace=True)`, or a
            # later `m.inplace = True`), not the tensor it overwrote: name it, fix where it is set.
            subject = Subject(flag.name, "module", flag.made.code if flag.made else "", flag.made, None)
            related += ctx.fix_at(flag.fix, flag.name, "inplace=False")
        elif write is not None and write.site and is_inplace_flag_op(write.op):
            related += ctx.fix_at(mod_loc, name, "inplace=False")  # F.relu(x, inplace=True) here
        if by_step:
            later = _later_graph_tensor(ctx, event, hit.index, saved_site)
            if later is not None:
                # The order bug: name the tensor of the old forward that a later backward still
                # needs (`d = D(g)`, `actor_loss = ...`); the stepped weight stays named in the
                # saved-at / modified-at entries.
                subject = later
                related += ctx.fix_at(later.created_at, later.name, "recompute after the step")
            again = later.created_at if later is not None and later.created_at else saved_loc
            fix = _step_fix(opt_name, again, again.code if later is not None and again is not None
                            else line_code(saved_site[0]) if saved_site else "", mod_loc)
        elif flag is not None and flag.made is not None and flag.fix.line != flag.made.line:
            fix = (f"Do not set `{flag.name} = True` (line {flag.fix.line}) on the module built at line "
                   f"{flag.made.line}: {saved_op} needs the value it saved unchanged for the gradient")
        elif flag is not None:
            fix = (f"Build `{flag.name}` without inplace=True (line {flag.fix.line}): "
                   f"{saved_op} needs the value it saved unchanged for the gradient")
        elif param is not None and write is not None and mod_loc is not None:
            # a weight changed by hand between the forward and its backward (clipping, renorm)
            fix = (f"Move `{line_code(write.site[0])}` (line {mod_loc.line}) after the backward, e.g. right "
                   "after optimizer.step(), so the forward and its backward see the same weights")
        else:
            fix = self._fix(name, write, saved_op)
        roles = {0: ["root"]}
        roles.setdefault(hit.index, []).append("modified")
        graph = snapshot_from_scan(event.scan, roles, {hit.index: name} if name else {},
                                   f"GG005: {name or 'modified saved tensor'}", roots=event.roots,
                                   entry=call_node("entry", "this backward", bw, ctx.iteration),
                                   creation=ctx.creation)
        node_id = graph.walk_id(hit.index)
        if write is not None and mod_loc is not None and node_id is not None:
            graph.add(call_node("inplace", f"in-place {write.op}", mod_loc, write.iteration))
            graph.link(node_id, "inplace", "saved tensor changed by")
        return self.finding(
            ctx, subject, mod_loc or bw, fix,
            {"saved_at": f"{saved_op} at line {saved_loc.line}" if saved_loc else saved_op,
             **story, "backward_line": bw.line if bw else "?", "fix": fix,
             "name": display(name, "A tensor")},
            related, graph=graph, message=message)

    def _note_step(self, event: StepCall, ev: Evidence) -> None:
        """Where this optimizer steps: the writes of a step made once the guard stopped recording
        are not seen, but a weight it holds that changed is still the step's doing."""
        opt = event.optimizer
        if not event.site:
            return
        try:
            ref = weakref.ref(opt)
        except TypeError:  # an optimizer that cannot be weakly referenced: not followed
            return
        self._steps[id(opt)] = (ref, event.site, ev.iteration)

    def _step_write(self, ev: Evidence, packed: Packed, saved_in: int | None) -> InplaceRecord | None:
        """The step of the optimizer holding the changed saved tensor, as the write that changed
        it, when no write was recorded (the guard stopped recording after the first iterations):
        the last step noted for that optimizer, no earlier than the iteration it was saved in."""
        param = _optimized_param(ev, packed)
        if param is None:
            return None
        best: tuple[Site, int] | None = None
        for ref, site, iteration in list(self._steps.values()):
            opt = ref()
            if opt is None or saved_in is not None and iteration < saved_in:
                continue
            if any(p is param for g in opt.param_groups for p in g["params"]) \
                    and (best is None or iteration > best[1]):
                best = (site, iteration)
        if best is None:
            return None
        return InplaceRecord("step", best[0], param._version, best[1], in_step=True)

    @staticmethod
    def _subject(ctx: RuleContext, hit: SavedHit, write: InplaceRecord | None, saved_site: Site,
                 param: Any) -> tuple[str | None, Subject]:
        """The user's name for the changed tensor: a live variable that is it (or shares its
        storage), else what the in-place line wrote to, else what the saving line assigned."""
        packed = hit.packed
        found = (ctx.name_of(param) if param is not None else None) \
            or find_name(shares_saved(packed, exact=True)) or find_name(shares_saved(packed))
        if found is not None:
            return found.name, ctx.subject(found.value, hit=found)
        name = written_name(write.site[0]) if write is not None and write.site else None
        if name is None and hit.attr == "_saved_result" and saved_site and packed.op:
            name = assigned_name(saved_site[0], packed.op)  # `h = torch.sigmoid(...)`: h is it
        made = ctx.loc(saved_site) if hit.attr == "_saved_result" else None
        return name, Subject(name, "tensor", summarize(packed.tensor), made, None)

    @staticmethod
    def _other_name(ctx: RuleContext, hit: SavedHit) -> str | None:
        found = find_name(shares_saved(hit.packed, exact=True)) or find_name(shares_saved(hit.packed))
        return found.name if found else None

    @staticmethod
    def _fix(name: str | None, write: InplaceRecord | None, saved_op: str) -> str:
        who = name or "the tensor"
        if write is None:
            return (f"Make the in-place op on {display(name)} after {saved_op} out of place (`+=`, "
                    "`[...] =`, `.clamp_()`, inplace=True), or clone before it; "
                    "GraphGuard(record_iterations=None) records every line to point at it")
        frame = write.site[0] if write.site else None
        op = write.op
        if is_inplace_flag_op(op):
            line = f" at line {frame.line}" if frame is not None else ""
            return (f"Drop inplace=True from the {op.lstrip('_')}{line} ({flag_op_forms(op)}): "
                    f"{saved_op} needs its output unchanged for the gradient")
        alt = out_of_place(frame)
        if alt is not None:
            return f"Write it out of place, `{alt}`, so {saved_op} keeps the value it saved"
        if op == "__setitem__":
            return (f"Assign into a copy (`{who} = {who}.clone()` first), or build the new value "
                    "out of place with torch.where / torch.cat")
        if op.endswith("_") and not op.endswith("__"):
            plain = op.rstrip("_")
            return f"Use the out-of-place `{who} = {who}.{plain}(...)` instead of `.{op}(...)`"
        return f"Clone {who} before changing it in place (`{who} = {who}.clone()`)"


MAX_UPSTREAM = 64  # graph nodes walked from each named tensor towards the modified node


def _distance(start: Any, target: Any, limit: int = MAX_UPSTREAM) -> int | None:
    """Edges from `start` down to `target` in the graph (breadth first, bounded), or None."""
    seen = {id(start)}
    frontier = [start]
    for depth in range(limit):
        nxt = []
        for node in frontier:
            if node is target:
                return depth
            for child, _ in getattr(node, "next_functions", ()) or ():
                if child is not None and id(child) not in seen:
                    seen.add(id(child))
                    nxt.append(child)
        if not nxt or len(seen) > limit * 8:
            return None
        frontier = nxt
    return None


def _later_graph_tensor(ctx: RuleContext, event: BackwardCall, index: int, saved_site: Site) -> Subject | None:
    """The tensor of the old forward that this backward reaches the stepped weight through: the
    user's live tensor closest above the node that saved the weight (`d` for `d = D(g)`), else the
    target of the statement that ran that forward (through helpers' `return` lines)."""
    node = event.scan.nodes[index]
    best: tuple[int, Any] | None = None
    for hit in find_names(lambda v: isinstance(v, torch.Tensor) and v.grad_fn is not None):
        d = _distance(hit.value.grad_fn, node)
        if d is not None and (best is None or d < best[0]):
            best = (d, hit)
    if best is not None:
        hit = best[1]
        subject = ctx.subject(hit.value, hit=hit)
        alias = ctx.name_of(hit.value)
        if alias is not None and alias.name != hit.name and subject.created_at is not None \
                and alias.name in assigned_targets(subject.created_at.file, subject.created_at.line):
            # the same tensor under a helper's parameter name (`td` in `actor.learn(s, a, td)`):
            # named as the line that made it writes it (`td_error = r + GAMMA * v_ - v`)
            subject = dataclasses.replace(subject, name=alias.name)
        if subject.created_at is None and hit.scope == "local" and hit.frame is not None:
            # made once the guard stopped recording: a local assigned by one statement of its
            # function is made there (with several, the op that made it is not known)
            lines = target_lines(hit.frame.file, hit.frame.line, hit.name)
            if len(lines) == 1:
                subject = dataclasses.replace(subject, created_at=lines[0])
        return subject
    made = assigned_target(saved_site) if saved_site else None
    if made is None:
        return None
    target, fr = made
    return Subject(target, "tensor", "", ctx.loc((fr,)), ctx.stamp(node).iteration if ctx.stamp(node) else None)


def _optimized_param(ev: Evidence, packed: Packed) -> Any:
    """The optimized parameter a saved tensor is (or is a view of), when it is one."""
    key = storage_key(packed.tensor)
    if key is None:
        return None
    version = packed.tensor._version
    for p in ev.optimized_params():
        if p._version == version and storage_key(p) == key:
            return p
    return None


def _saving_op(node: Any, packed: Packed, stamp: Any) -> str:
    """The op that saved the tensor, as the user called it: the recorded call (`linear`) when it
    was recorded for this very node, `Square.apply` for a custom Function (whose apply the mode
    does not see, so the recorded call would be another one), else the node's own op."""
    if isinstance(node, BackwardCFunction):
        return f"`{type(node).__name__.removesuffix('Backward')}.apply`"
    if packed.op and (stamp is None or not packed.site or stamp.site == packed.site):
        return f"`{packed.op}`"
    return f"`{node_op(node)}`"


def _story_args(packed: Packed, write: InplaceRecord | None, mod_loc: Any, message: str,
                opt_name: str | None) -> dict[str, Any]:
    """The template fields of the story `message` tells of what changed the saved tensor: the
    step, the in-place op, or the versions of a write the guard did not see."""
    if message == "modified-by-step":
        return {"step": f"`{opt_name}.step()`" if opt_name else "the optimizer step",
                "line": mod_loc.line}
    if message == "modified-in-place":
        return {"op": describe_inplace(write.op, write.site[0]), "line": mod_loc.line}
    return {"saved_version": packed.version, "version": packed.tensor._version}


def _optimizer_name(ctx: RuleContext, param: Any) -> str | None:
    """The user's name for the optimizer that holds `param`."""
    for name, opt in ctx.optimizers():
        if any(p is param for g in opt.param_groups for p in g["params"]):
            return name
    return None


def _step_fix(opt_name: str | None, saved_loc: Any, saved_code: str, step_loc: Any) -> str:
    """A forward reused after an optimizer step changed the weights it saved (a GAN's D output)."""
    step = f"{opt_name}.step()" if opt_name else "optimizer.step()"
    where = f" after line {step_loc.line}" if step_loc is not None else f" after {step}"
    redo = (f"repeat `{saved_code}` (line {saved_loc.line}){where}" if saved_loc and saved_code
            else f"run that forward again{where}")
    return (f"Recompute the forward after the step: {redo}; or run every backward that needs the "
            f"old forward before {step} (or one backward on the summed losses)")
