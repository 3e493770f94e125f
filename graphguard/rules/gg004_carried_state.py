"""GG004 carried-state: last iteration's value, with its graph, feeds this iteration's."""
from __future__ import annotations

import dataclasses
import re
from typing import Iterator

import torch

from ..capture.saved import find_modified_saved, storage_key
from ..lookup.assigned import assigned_target, kept_attribute, stored_by_method, stored_entry, written_name
from ..lookup.names import find_name
from ..events import BackwardCall
from ..model import Finding, Message, Related, Role, Subject
from .shared.growth import Growth
from .shared.stale import classify, site_key, snapshot, snapshot_with_roles
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["CarriedState"]

MAX_SITES = 256  # backward lines whose graph size is remembered (for the growth plot)


class CarriedState(Rule):
    """## What it does
    Detects state carried from one iteration into the next without `detach()`: an RNN/LSTM hidden
    state, a running estimate, an attribute of the model. The same line made part of the old graph
    and part of the new one, so each iteration's graph hangs on to all the previous ones.

    ## Why is this bad?
    Without `retain_graph=True` the second backward fails ("Trying to backward through the graph
    a second time"). With it, the graph and the time per step grow every iteration until memory
    runs out, and gradients flow back through every earlier batch.

    ## Example
    ```python
    hidden = torch.zeros(1, 16)
    for x, y in batches:
        out, hidden = rnn(x, hidden)      # hidden still carries last batch's graph
        loss = F.mse_loss(out, y)
        loss.backward()
    ```

    ## Use instead
    ```python
    for x, y in batches:
        hidden = hidden.detach()          # truncated BPTT: keep the value, drop the history
        out, hidden = rnn(x, hidden)
    ```

    Truncated BPTT with one backward per chunk and one optimizer step per sequence counts too:
    the state stored after a chunk's last output (`state.update_state(h.unsqueeze(0))`) reaches
    the next chunk's graph, whose forward the same lines made again. A state that a method of an
    object stores is named as that method writes it (`self.hidden`).

    ## Known problems
    Needs the creation lines recorded in the first iterations; in light mode a carried state is
    first reported as GG001, and recording is switched back on. Between two backwards of one
    optimizer step, a kept state whose next graph other lines made (another model reads it) is
    left to GG001/GG003. A value computed before another optimizer's step of the same training
    step and read by that step's next loss (advantages from a critic stepped first, a lambda
    return) was not kept for a next step: GG005 reports the stepped weights, GG003 a freed graph.
    """

    code = "GG004"
    slug = "carried-state"
    severity = "error"
    summary = "state carried across iterations without detach: the graph grows every iteration"
    messages = (
        Message("freed", "error",
                "{name} carries its graph from {made_in} into this one ({stale} old graph nodes "
                "reached, whose buffers are freed: this backward would fail); detach it at the "
                "start of each iteration. Fix: {fix}",
                "last iteration's value, with its graph, feeds this one; its buffers were freed, "
                "so this backward fails"),
        Message("retained", "error",
                "{name} carries its graph from {made_in} into this one ({stale} old graph nodes "
                "reached); detach it at the start of each iteration. Fix: {fix}",
                "last iteration's value, with its graph kept by retain_graph=True, feeds this "
                "one: the graph grows every iteration"),
        Message("stepped-weights", "error",
                "{name} carries its graph from {made_in} into this one ({stale} old graph nodes "
                "reached; the optimizer has stepped the weights its graph saved since: this "
                "backward would fail); detach it at the start of each iteration. Fix: {fix}",
                "a model output kept from an earlier iteration with its graph (no backward ran "
                "it) is used after the optimizer stepped the weights that graph saved"),
    )
    events = (BackwardCall,)
    # quiet: nothing traversed before and no saved tensor changed (a carry shows as either)
    quiet_skip = (BackwardCall,)
    supersedes = ("GG101",)  # it already explains a graph carried over

    def __init__(self) -> None:
        self.walked: dict[tuple, tuple[int, int]] = {}  # backward line -> (iteration, nodes walked)
        self.series: dict[tuple, Growth] = {}  # reported backward line -> graph size per iteration

    def detect(self, event: BackwardCall, ev: Evidence) -> Iterator[Detection]:
        before = self._walked(event, ev.iteration)
        # the family's one classifier (NOTE [stale family classifier] in shared/stale.py)
        a, verdict = classify(event, ev)
        if a.kind == "none":
            # only a training line that already ran in an earlier iteration carries state (a first
            # backward after another loss's step is GG005's order bug)
            if before is not None and before[0] < ev.iteration:
                yield from self._stepped_carry(event, ev)
            return
        if verdict.code != self.code:
            return
        yield Detection(verdict.message, event.scan.nodes[a.boundary],
                        {"analysis": a, "growth": self._series(event, before, ev.iteration)})

    def describe(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding | None:
        if d.message == "stepped-weights":
            return self._describe_stepped(d, event, ctx)
        a = d.facts["analysis"]
        node = d.subject
        st = ctx.stamp(node)
        key = site_key(st.site) if st else None
        # the variable that now holds this iteration's value made by the same line
        hit = find_name(lambda v: isinstance(v, torch.Tensor) and v.grad_fn is not None
                        and (s := ctx.stamp(v.grad_fn)) is not None and site_key(s.site) == key)
        if hit is None:
            hit = ctx.name_of_node(node)
        subject = ctx.subject_of_node(node, hit)
        name = subject.name
        holder = re.fullmatch(r"(.+)\[-?\d+\]", name or "")
        # named as the line that made it writes it (`self.hidden`, `h`), made where that line is
        written = written_name(st.site if st else None, hit.name if hit else None,
                               hit.frame if hit else None)
        # a local of a call that returned (`recurrent_states` in a scan helper) carries nothing:
        # the attribute the layer stores it in does (`self.recurrent_states = recurrent_states`)
        kept = kept_attribute(st.site if st else None, hit.name if hit else None, written)
        if kept is not None:
            written = kept
        # handed to a method of the object that holds it (`state.update_state(h.unsqueeze(0))`):
        # the attribute that method stores it in (`self.hidden = (rnnstate,)`) is re-assigned
        # each call, not the object the loop names (`dec_state`)
        stored = stored_by_method(st.site if st else None, hit.name if hit else None)
        if stored is not None:
            written = stored
        if written is None and st is not None:
            # made straight into a container (`self.memory.append((self.critic(s), r))`): its
            # entry, as the loop sees it, is what carries the value
            entry = stored_entry(node, st.site)
            if entry is not None:
                subject = dataclasses.replace(subject, name=entry)
                name = entry
                holder = re.fullmatch(r"(.+)\[-?\d+\]", name)
        if written is not None:
            subject = dataclasses.replace(subject, name=written[0],
                                          created_at=ctx.loc((written[1],)) or subject.created_at)
            name = written[0]
        if holder and written is not None and not re.fullmatch(r".+\[-?\d+\]", name):
            base = name  # the target holds the (h, c) tuple whose element is carried
            fix = f"{base} = tuple(t.detach() for t in {base})"
        elif holder:  # an element of an (h, c) tuple: tuples cannot be assigned into
            base = holder.group(1)
            fix = f"{base} = tuple(t.detach() for t in {base})"
        elif name:
            fix = f"{name} = {name}.detach()"
        else:
            fix = "call .detach() on the carried tensor"
        prev = ctx.loc(a.mark.site) if a.mark else None
        related = [Related(Role.CONSUMED_BY, None, "backward", prev, a.mark.iteration if a.mark else None)]
        if subject.created_at:
            related.append(Related(Role.ASSIGNED_AT, name, None, subject.created_at))
        if hit is not None and hit.name and hit.name != name:
            # the state as the training loop's frame holds it (`model.hidden[0]` for `self.hidden`,
            # `hidden[0]`: an element of an (h, c) tuple): where a fix outside the writer can reach it
            related.append(Related(Role.HELD_BY, hit.name, None, ctx.loc((hit.frame,))))
        # the detach goes before this iteration's first use of the carried value: the fresh node
        # that hangs on the old part
        par = event.scan.walk.parent[a.boundary]
        use = ctx.stamp(event.scan.nodes[par]) if par >= 0 else None
        here = ctx.loc(event.site)
        fix_at = ctx.loc(use.site[:1]) if use and use.site else None
        if fix_at is not None and all((fix_at.file, fix_at.line) != (x.file, x.line)
                                      for x in (subject.created_at, here) if x is not None):
            related.append(Related(Role.FIX_AT, name, None, fix_at))
        f = self.finding(ctx, subject, ctx.loc(event.site), fix,
                         {"made_in": f"iteration {st.iteration}" if st else "an earlier iteration",
                          "stale": len(a.members), "fix": fix, "name": display(name)},
                         related, message=d.message,
                         graph=snapshot(event, a, name, f"GG004: {name or 'carried state'}", ctx.creation))
        f.details["growth"] = d.facts["growth"].details
        return f

    def _stepped_carry(self, event: BackwardCall, ev: Evidence) -> Iterator[Detection]:
        """A value computed by the model in an earlier iteration, kept with its graph (no backward
        ran through it: nothing is marked) and used in this iteration's loss after the optimizer
        stepped the weights that graph saved (a previous output kept as a pseudo target): the
        carried state's graph, caught through the stepped weights it saved. Looked at only when
        some saved tensor changed since it was saved (PyTorch is about to raise).

        One detection holding every such saved tensor, in walk order, with the frames of its
        creation outside the model's forward methods: `describe` words the first one the user
        assigned there (`previous_iter_output = self.model(im)[0].clone()`)."""
        modified = ev.modified_saved()
        if not modified or event.scan is None or ev.optimizer_steps() == 0:
            return
        stepped = {id(p) for p in ev.optimized_params()}
        candidates = []
        for hit in find_modified_saved(event.scan.nodes, modified):
            node = event.scan.nodes[hit.index]
            st = ev.stamp(node)
            if st is None or not st.site or st.iteration >= ev.iteration:
                continue  # this iteration's forward: GG005's (an op or a step between backwards)
            if not any(storage_key(hit.packed.tensor) == storage_key(p) for p in ev.optimized_params()
                       if id(p) in stepped):
                continue
            # made where the model was called, outside its forward methods
            outer = [fr for fr in st.site if fr.function != "forward"]
            if outer:
                candidates.append((hit, st, outer))
        if candidates:
            yield Detection("stepped-weights", None, {"candidates": candidates})

    def _describe_stepped(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding | None:
        """The first candidate whose creation a user's assignment names; None when none is (the
        value is then no variable the user keeps: nothing to name, nothing reported, as before
        the split; see the report of the detect/describe split)."""
        for hit, st, outer in d.facts["candidates"]:
            made = assigned_target(outer)
            if made is None:
                continue
            name, fr = made
            where = ctx.loc((fr,))
            subject = Subject(name, "tensor", "", where, st.iteration)
            fix = f"{name} = {name}.detach()  (where it is made, line {where.line if where else '?'})"
            related = ctx.fix_at(where, name, "detach")
            return self.finding(ctx, subject, ctx.loc(event.site), fix,
                                {"made_in": f"iteration {st.iteration}", "stale": 1,
                                 "fix": fix, "name": display(name)}, related, message=d.message,
                                graph=snapshot_with_roles(event, {hit.index: ["modified"]}, hit.index, name,
                                                          f"GG004: {name} kept from iteration {st.iteration}",
                                                          ctx.creation))
        return None

    def _walked(self, event: BackwardCall, iteration: int) -> tuple[int, int] | None:
        """Remember the size of the graph this backward line walks (one dict entry per line, at
        backward time); a reported line's growth series gets one more point. Returns the size at
        the line's previous call."""
        if event.scan is None or not event.site:
            return None
        line = site_key(event.site[:1])
        n = len(event.scan.nodes)
        before = self.walked.get(line)
        if before is not None or len(self.walked) < MAX_SITES:
            self.walked[line] = (iteration, n)
        series = self.series.get(line)
        if series is not None:  # also once light mode can no longer tell the carry apart
            series.add(iteration, n, truncated=event.scan.truncated)
        return before

    def _series(self, event: BackwardCall, before: tuple[int, int] | None, iteration: int) -> Growth:
        """This backward line's growth series: made on its first report from the size its graph
        had at the line's previous call and now; later calls add to it (_walked())."""
        line = site_key(event.site[:1]) if event.site else None
        series = self.series.get(line)
        if series is None:
            series = Growth()
            if line is not None:
                self.series[line] = series
            if before is not None and before[0] < iteration:
                series.add(*before)
            series.add(iteration, len(event.scan.nodes), truncated=event.scan.truncated)
        return series
