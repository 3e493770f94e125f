"""GG001 stale-graph: a backward runs into graph parts an earlier iteration's backward already used."""
from __future__ import annotations

import dataclasses
from typing import Any, Iterator

from ..events import BackwardCall
from ..lookup.assigned import kept_attribute, name_where_made
from ..lookup.parametrized import cached_parametrization
from ..model import Finding, Message, Related, Role, Subject
from .shared.stale import classify, snapshot, snapshot_with_roles
from .shared.accumulator import unreset_accumulator
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["StaleGraph"]

MAX_MEMBERS = 512  # stale nodes looked at for a trained parameter they read


class StaleGraph(Rule):
    """## What it does
    Before each backward, checks whether the graph it is about to run reaches nodes that a
    backward of an earlier iteration already ran through: a tensor built once (before the loop,
    or in an earlier iteration) that still carries autograd history and is used again.

    ## Why is this bad?
    The first backward frees the buffers those nodes saved, so the next one fails with
    "Trying to backward through the graph a second time", a message that names no variable.
    With `retain_graph=True` it does not fail: the old part is run again every iteration, its
    leaves keep collecting gradient, and the memory is never released.

    ## Example
    ```python
    ref = torch.zeros(8, requires_grad=True) * 2   # built once, with history
    for step in range(3):
        loss = ((w - ref) ** 2).sum()
        loss.backward()          # second iteration: backward through the graph a second time
        opt.step(); opt.zero_grad()
    ```

    ## Use instead
    ```python
    ref = (torch.zeros(8, requires_grad=True) * 2).detach()   # or build it under torch.no_grad()
    ```

    A graph consumed by a backward the guard never saw (a notebook cell run before
    `%graphguard on`, a backward before the `with`) is found too: its nodes' saved values
    were freed, and reading them before this backward says so.

    ## Known problems
    Only graph parts built while the guard was active carry the line of the op that made them;
    for parts built before the `with`, the line that assigns the user's name for the tensor
    is given instead. With `inputs=` (or `torch.autograd.grad`), a part consumed outside the
    guard is explained only after PyTorch raises.
    """

    code = "GG001"
    slug = "stale-graph"
    severity = "error"
    summary = "backward reaches graph parts freed (or re-run) by an earlier iteration's backward"
    messages = (
        Message("freed", "error",
                "{name} was built {made_in} and its graph was already used by {consumed}; this "
                "backward would run through it again and fail (its saved buffers were freed). "
                "Fix: {fix}",
                "a tensor built once (or in an earlier iteration) with history: an earlier "
                "iteration's backward freed its graph, and this backward reaches it"),
        Message("retained", "error",
                "{name} was built {made_in} and its graph was already used by {consumed}; this "
                "backward would run through it again (retain_graph keeps it alive). Fix: {fix}",
                "a tensor built once with history, kept alive by retain_graph=True, re-run by the "
                "same backward line every iteration"),
        Message("loss-carried", "error",
                "{name} was built {made_in} and its graph was already used by {consumed}; this "
                "backward would run through it again and fail (its saved buffers were freed). "
                "Fix: {fix}",
                "this loss holds the earlier backward's whole loss (an accumulator grown again "
                "without being reset)"),
        Message("consumed-outside", "error",
                "{name} was built before the guard was entered and its graph was already used by "
                "a backward the guard did not see (before it was entered, or outside it); this "
                "backward would run through it again and fail (its saved buffers were freed). "
                "Fix: {fix}",
                "a graph part made before the guard, freed by a backward the guard never saw (a "
                "notebook cell, a backward before the `with`)"),
    )
    events = (BackwardCall,)
    # quiet: no node an earlier backward traversed or one outside the guard freed: nothing stale
    quiet_skip = (BackwardCall,)
    supersedes = ("GG101",)  # it already explains a graph carried over

    def detect(self, event: BackwardCall, ev: Evidence) -> Iterator[Detection]:
        # the family's one classifier (NOTE [stale family classifier] in shared/stale.py): which
        # of GG001, GG003 and GG004 this backward is, from capture data only
        a, verdict = classify(event, ev)
        if verdict.code != self.code:
            return
        if verdict.message == "consumed-outside":
            freed, top = event.scan.unmarked_freed  # the scan's first node freed outside the guard
            yield Detection(verdict.message, event.scan.nodes[top], {"top": top, "freed": freed})
        elif verdict.message == "loss-carried":
            # the earlier backward's own loss held by this graph (run-time evidence, see
            # shared/accumulator.py): an accumulator carried into this loss, ours whatever the lines
            yield Detection(verdict.message, event.scan.nodes[verdict.carried_at],
                            {"analysis": a, "carried": verdict.carried_at})
        else:
            yield Detection(verdict.message, event.scan.nodes[a.boundary], {"analysis": a})

    def describe(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        if d.message == "consumed-outside":
            return self._consumed_outside(d, event, ctx)
        a = d.facts["analysis"]
        consumed = ctx.loc(a.mark.site) if a.mark else None
        earlier = f"the backward at line {consumed.line}" if consumed else "an earlier backward"
        related = [Related(Role.CONSUMED_BY, None, "backward", consumed, a.mark.iteration if a.mark else None)]
        carried = d.facts.get("carried")
        # how the source spells the carried loss (`loss += t` never reset): wording only, the
        # node alone words it when the source does not show an accumulator
        acc = unreset_accumulator(event, a, ctx, carried) if carried is not None else None
        if acc is not None:
            node = d.subject
            subject = dataclasses.replace(ctx.subject_of_node(node), name=acc.name,
                                          created_at=acc.made or ctx.subject_of_node(node).created_at)
            name = acc.name
            where = f" (as at line {acc.reset.line})" if acc.reset else ""
            fix = (f"reset `{name}` before it collects the new terms{where}: it still holds the graph "
                   "the earlier backward freed")
            related += ctx.fix_at(acc.reset, name, "reset the accumulator")
        else:
            # worded from the stale part's boundary, as for a tensor built once
            node = event.scan.nodes[a.boundary]
            subject, name, fix, more = self._stale_tensor(event, a, node, ctx)
            related += more
        return self.finding(
            ctx, subject, ctx.loc(event.site), fix,
            {"made_in": (f"in iteration {subject.created_in_iteration}" if subject.created_in_iteration is not None
                         else "in an earlier iteration"),
             "consumed": earlier, "fix": fix, "name": display(name)},
            related, message=d.message,
            graph=snapshot(event, a, name, f"GG001: {name or 'stale graph'}", ctx.creation))

    @staticmethod
    def _stale_tensor(event: BackwardCall, a: Any, node: Any,
                      ctx: RuleContext) -> tuple[Subject, str | None, str, list[Related]]:
        """The stale tensor as the user knows it (the subject, its name), the fix and its
        `fix-at`: named where it was made, by the attribute a cache keeps it in, or as the weight
        a `parametrize.cached()` computed once; detach it, or build it again each iteration when
        it is the loss itself or reads weights the optimizer trains."""
        related: list[Related] = []
        subject = ctx.subject_of_node(node)
        st = ctx.stamp(node)
        made = name_where_made(node, st.site) if st is not None and st.site else None
        # a cache: made as a local of a call that returned (`kvectors`), kept by the attribute
        # a method stores it in (`self._cached_kvectors = kvectors`), which is what goes stale
        kept = kept_attribute(st.site, subject.name, made) if made is not None else None
        same_attr = made is not None and subject.name is not None and made[0].startswith("self.") \
            and subject.name.partition(".")[2] == made[0].partition(".")[2]
        # only the assignment at the op's own line: through a helper's `return` the caller's
        # target may be another tensor (a parametrization runs inside `self.branch(x)`)
        own_line = made is not None and (made[1] is None or made[1] == st.site[0])
        param = None
        if st is not None and st.site:
            files = [fr.file for fr in st.site] + [fr.file for fr in event.site or ()]
            param = cached_parametrization(node, files, event.site or ())
        if param is not None:
            # the weight a `with parametrize.cached():` computed once for every forward
            subject = dataclasses.replace(subject, name=param.name, kind="parameter",
                                          created_at=param.registered or subject.created_at)
            related += ctx.fix_at(param.cached_at, param.name, "parametrize.cached()")
        elif kept is not None:
            subject = dataclasses.replace(subject, name=kept[0],
                                          created_at=ctx.loc((kept[1],)) or subject.created_at)
        elif made is not None and made[0] == subject.name and made[1] is not None \
                and made[1] != st.site[0]:
            # the name lives in a caller of the op that made the tensor (`out, hidden =
            # encoder(x)` whose GRU ran in `forward`): made at the caller's line that assigns it
            subject = dataclasses.replace(subject, created_at=ctx.loc((made[1],)) or subject.created_at)
        elif made is not None and made[0] != subject.name and not same_attr and own_line:
            # named as written where it was made (`training_seq = conv1D(raw)`), not by the
            # attribute that later holds it (`self.ds`); `self.normed` made in __init__ stays
            # the live `model.normed`, the same attribute seen from outside
            subject = dataclasses.replace(subject, name=made[0], created_at=(
                ctx.loc((made[1],)) if made[1] is not None else subject.created_at))
        name = subject.name
        fix = (f"{name} = {name}.detach()  (or build {name} under torch.no_grad())" if name
               else "call .detach() on the tensor made at the line above, or build it under torch.no_grad()")
        # detaching is no fix when the stale part is the loss itself, or when it reads weights
        # the optimizer trains: they would get no gradient through it. Build it again instead
        trained = None if a.boundary == 0 else _trained_leaf(event, a, ctx)
        rebuild = a.boundary == 0 or trained is not None
        if param is not None:
            where = f" (line {param.cached_at.line})" if param.cached_at else ""
            fix = (f"enter `parametrize.cached()`{where} around each forward, inside the loop, so "
                   f"{name} is computed again for every backward")
        elif rebuild:
            what = display(name, "it")
            if trained is None:
                fix = (f"compute {what} again in each iteration, from the current weights: the "
                       f"forward that makes it belongs inside the loop (a detached {what} "
                       "leaves backward nothing to run)")
            else:
                fix = (f"build {what} again in each iteration instead of keeping the first one: "
                       f"it depends on {display(trained)}, which the optimizer trains, so "
                       f".detach() would stop {display(trained)}'s gradient")
            related += ctx.fix_at(subject.created_at, name, "rebuild each iteration")
        else:
            related += ctx.fix_at(subject.created_at, name, "detach")  # detach it where it is made
        return subject, name, fix, related

    def _consumed_outside(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        """The graph part was made before the guard and a backward the guard never saw freed it
        (a notebook cell's `loss.backward()`, a backward before the `with`): its saved buffers
        are gone, so this backward raises. The scan found the first such node."""
        freed, top = d.facts["freed"], d.facts["top"]
        node = d.subject
        made = ctx.made_name_of_node(node) if ctx.stamp(node) is None else None
        subject = ctx.subject_of_node(node, made[0] if made else None)
        if subject.created_at is None and made is not None:
            # no op of it was seen: the line whose assignment made it (before the guard)
            subject = dataclasses.replace(subject, created_at=made[1])
        name = subject.name
        root = top == 0 or event.scan.walk.parent[top] < 0
        if root:
            fix = (f"run the forward again so {display(name)} is a new graph before this backward, "
                   "or pass retain_graph=True to the backward that ran before the guard")
        else:
            fix = (f"{name} = {name}.detach()  (or build {name} under torch.no_grad()), or pass "
                   "retain_graph=True to the backward that ran before the guard" if name else
                   "detach the tensor made before the guard, or pass retain_graph=True to the "
                   "backward that ran before the guard")
        related = [Related(Role.CONSUMED_BY, None, "backward before the guard", None, None)]
        related += ctx.fix_at(subject.created_at, name, "rebuild" if root else "detach")
        roles = {top: ["stale"], freed: ["stale", "freed"]} if freed != top else {top: ["stale", "freed"]}
        return self.finding(
            ctx, subject, ctx.loc(event.site), fix, {"fix": fix, "name": display(name)},
            related, message=d.message,
            graph=snapshot_with_roles(event, roles, top, name, f"GG001: {name or 'stale graph'}",
                                      ctx.creation))


def _trained_leaf(event: BackwardCall, a: Any, ctx: RuleContext) -> str | None:
    """The name of a parameter an optimizer holds that the stale part reads directly (one of its
    nodes feeds that parameter's AccumulateGrad), or None. Looked at only when GG001 reports."""
    params = {id(p) for p in ctx.optimized_params()}
    if not params or event.scan is None:
        return None
    nodes = event.scan.nodes
    for i in sorted(a.members)[:MAX_MEMBERS]:
        for nxt, _ in getattr(nodes[i], "next_functions", None) or ():
            v = getattr(nxt, "variable", None)
            if v is not None and id(v) in params:
                hit = ctx.name_of(v)
                return hit.name if hit is not None and hit.name else "a trained parameter"
    return None
