"""GG003 double-backward: a second backward in one iteration runs through nodes the first freed."""
from __future__ import annotations

import dataclasses
from typing import Iterator

from ..events import BackwardCall
from ..lookup.assigned import cached_attribute, name_where_made
from ..model import Finding, Message, Related, Role
from .shared.stale import classify, snapshot
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["DoubleBackward"]


class DoubleBackward(Rule):
    """## What it does
    Before a backward, checks whether another backward call of the same iteration already ran
    through (and freed) part of its graph: two losses sharing a trunk, each with its own
    `backward()`, or a GAN generator step through a `fake` the discriminator step did not detach.

    ## Why is this bad?
    The first backward freed the shared nodes' buffers, so the second fails with "Trying to
    backward through the graph a second time", without saying which tensor is shared.

    ## Example
    ```python
    feats = encoder(x)
    loss_a = head_a(feats).mean(); loss_a.backward()
    loss_b = head_b(feats).mean(); loss_b.backward()   # feats' graph is already freed
    ```

    ## Use instead
    ```python
    (loss_a + loss_b).backward()          # one backward for the sum
    # or: loss_a.backward(retain_graph=True); loss_b.backward()
    # or, in a GAN discriminator step: D(fake.detach())
    ```

    ## Known problems
    Two backward calls on one line inside an inner loop are judged as iterations (GG001), except
    a loop over several optimizers of one training step (peer models each stepping its own
    optimizer) while the guard judges those steps in full. A backward from another line after an
    optimizer step that began a new training step (`loss.backward(); opt.step(); loss.backward()`)
    runs an earlier iteration's graph: GG001, unless the two losses were built together; a step
    the guard skimmed (light mode) or an iteration ended by `guard.step()` leaves it GG003.
    """

    code = "GG003"
    slug = "double-backward"
    severity = "error"
    summary = "a second backward in one iteration runs through nodes the first one freed"
    messages = (
        Message("second-backward", "error",
                "{name} is shared by two backward calls: the one at line {first_line} already freed "
                "its graph, so this one would fail. Fix: {fix}",
                "a second backward of one training step runs through a part the first one freed "
                "(two losses sharing a trunk, a GAN's undetached fake)"),
    )
    events = (BackwardCall,)
    # quiet: no node an earlier backward traversed (analyze finds nothing)
    quiet_skip = (BackwardCall,)

    def detect(self, event: BackwardCall, ev: Evidence) -> Iterator[Detection]:
        # the family's one classifier decides between GG001, GG003 and GG004 (NOTE [stale family
        # classifier] in shared/stale.py): one backward line run twice is an earlier iteration's
        # graph (GG001) unless the losses were built together or the line runs once per optimizer
        # of one training step; another line's backward after a later training step's optimizer
        # step is GG001's too; a loss holding the whole earlier one (an accumulator) is GG001's
        a, verdict = classify(event, ev)
        if verdict.code == self.code:
            # the shared part as the first backward freed it: its topmost node that backward ran
            yield Detection(verdict.message, event.scan.nodes[a.marked_boundary], {"analysis": a})

    def describe(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        a = d.facts["analysis"]
        node = d.subject
        subject = ctx.subject_of_node(node)
        st = ctx.stamp(node)
        made = name_where_made(node, st.site if st else None)
        if made is not None:  # named as written where it was made, made at that frame's line
            subject = dataclasses.replace(subject, name=made[0], created_at=(
                ctx.loc((made[1],)) if made[1] is not None else subject.created_at))
        name = subject.name
        first = ctx.loc(a.mark.site) if a.mark else None
        cache = cached_attribute(name, node)
        if cache is not None:
            # a library object that computed the shared tensor once and keeps it (a distribution's
            # logits) has no .detach(), and one made again from the same input still shares its graph
            fix = ("sum the losses and call backward once, or pass retain_graph=True to the first "
                   f"backward: {name} computed its {cache} once and keeps them, so both losses run "
                   "through that graph")
        else:
            shared = f"{name}.detach()" if name else ".detach() on the shared tensor"
            fix = ("sum the losses and call backward once, or pass retain_graph=True to the first "
                   f"backward, or use {shared} where the second loss must not reach it")
        related = [Related(Role.CONSUMED_BY, None, "backward", first, a.mark.iteration if a.mark else None)]
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"first_line": first.line if first else "?", "fix": fix,
                             "name": display(name, "A tensor")},
                            related, message=d.message,
                            graph=snapshot(event, a, name, f"GG003: {name or 'shared graph'}", ctx.creation))
