"""GG102 retain-graph-growth: retain_graph=True in a loop keeps re-running an ever older graph."""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterator

import torch

from ..lookup.assigned import name_where_made
from ..lookup.names import NameHit, find_name, find_names, resolve
from ..lookup.source import assigned_targets
from ..events import BackwardCall
from ..model import Finding, Message, Related, Role
from .shared.growth import Growth
from .shared.snapshot import MAX_SNAPSHOT_NODES
from .shared.stale import StaleAnalysis, analyze, site_key, snapshot, snapshot_with_roles
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["RetainGraphGrowth"]

MAX_SITES = 256  # backward lines whose graph size is remembered
REWALKS = 3  # retained backwards of one line, in one iteration, each re-walking a larger graph


class RetainGraphGrowth(Rule):
    """## What it does
    Fires on a `backward(retain_graph=True)` (or `autograd.grad(..., retain_graph=True)`) that
    runs again through graph nodes built in an earlier iteration and kept alive by an earlier
    retained backward. It names the tensor that drags the old graph in (usually a state carried
    without `detach()`, GG004, or a value built once with history, GG001) and how much the
    walked graph grew.

    ## Why is this bad?
    `retain_graph=True` is the fix PyTorch's error message suggests for "backward through the
    graph a second time", and it makes the error go away: but every iteration now keeps the
    previous graphs and runs backward through all of them again. Steps get slower and memory
    grows until the process dies; gradients flow into data from long-gone batches.

    ## Example
    ```python
    hidden = torch.zeros(1, 8, 16)
    for x, y in batches:
        out, hidden = gru(x, hidden)
        loss = F.mse_loss(head(out), y)
        loss.backward(retain_graph=True)   # "fixes" the error, graph grows forever
        opt.step(); opt.zero_grad()
    ```

    ## Use instead
    ```python
    for x, y in batches:
        hidden = hidden.detach()           # cut the history; no retain_graph needed
        out, hidden = gru(x, hidden)
        F.mse_loss(head(out), y).backward()
    ```

    ## Known problems
    Retaining the graph for a second loss of the same iteration is legitimate and never reported.
    A graph deliberately re-used across iterations (a fixed graph differentiated many times) is
    reported when an optimizer step separates the uses.
    """

    code = "GG102"
    slug = "retain-graph-growth"
    severity = "warning"
    summary = "retain_graph=True in a loop while the retained graph grows or is re-run every iteration"
    messages = (
        Message("carried-state", "warning",
                "this backward(retain_graph=True) runs again through {stale} graph nodes kept from "
                "iteration {since}{growth}; the cause is {name}, carried from one iteration into "
                "the next without detach (see GG004). {fix}",
                "retain_graph=True re-runs last iterations' graphs, dragged in by a state carried "
                "without detach"),
        Message("built-once", "warning",
                "this backward(retain_graph=True) runs again through {stale} graph nodes kept from "
                "iteration {since}{growth}; the cause is {name}, built once with history and "
                "re-used every iteration (see GG001). {fix}",
                "retain_graph=True re-runs, every iteration, the graph of a tensor built once "
                "with history"),
        Message("rewalked", "warning",
                "this backward(retain_graph=True) runs again through {stale} graph nodes kept from "
                "iteration {since}{growth}; the cause is {name}, re-run by every retained backward "
                "of this iteration, each reaching further. {fix}",
                "one line's retained backwards, within one iteration, each re-run a larger graph "
                "(a loss per layer or per time step)"),
    )
    events = (BackwardCall,)
    # quiet: no retain_graph and nothing traversed before
    quiet_skip = (BackwardCall,)
    supersedes = ("GG101",)  # it already explains a graph carried over

    def __init__(self) -> None:
        self.walked: dict[tuple, tuple[int, int]] = {}  # backward line -> (iteration, nodes walked)
        self.reported: set[tuple] = set()  # backward lines already reported (once is enough)
        self.series: dict[tuple, Growth] = {}  # reported backward line -> its walked-graph sizes
        # backward line -> (iteration, growing retained re-walks in a row, nodes walked last)
        self.rewalks: dict[tuple, tuple[int, int, int]] = {}

    def detect(self, event: BackwardCall, ev: Evidence) -> Iterator[Detection]:
        if not event.retain_graph or event.scan is None:
            return
        key = site_key(event.site[:1]) if event.site else None
        before = self.walked.get(key)  # this line's walked size at its previous retained call
        growth = self._growth(event, ev.iteration)
        series = self.series.get(key)
        if series is not None:  # the reported line's graph, one more point for the growth plot
            series.add(ev.iteration, len(event.scan.nodes), truncated=event.scan.truncated)
        rewalk = self._rewalk(event, ev, key)
        a = ev.shared(analyze, event)
        if a.kind == "none" and rewalk is not None:
            # several backward(retain_graph=True) calls of one line in one iteration, each
            # re-running the part the previous one walked and more (a loss per layer or per time
            # step): the cost grows with every call and nothing is freed until the iteration ends
            if key in self.reported:
                return
            self.reported.add(key)
            calls = self.rewalks[key][1] + 1
            series = self.series[key] = Growth()
            series.add(ev.iteration, len(event.scan.nodes), truncated=event.scan.truncated)
            yield Detection("rewalked", event.scan.nodes[rewalk],
                            {"first": rewalk, "calls": calls, "series": series})
            return
        if a.kind != "retained":
            return  # freed: PyTorch will raise, and GG001/GG003/GG004 say why
        line = site_key(event.site[:1])
        if line in self.reported:
            # later iterations may be unrecorded (light mode): the cause would go unnamed
            return
        self.reported.add(line)
        series = self._series(line, before, event, ev.iteration)
        # the story is the analysis' own: the lines that made the old part made nodes of this
        # graph too (a carried state, GG004's cause), or the old part was built once (GG001's)
        yield Detection("carried-state" if a.carried else "built-once", event.scan.nodes[a.boundary],
                        {"analysis": a, "growth": growth, "series": series})

    def describe(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        if d.message == "rewalked":
            return self._describe_rewalk(d, event, ctx)
        a = d.facts["analysis"]
        hit, st = self._cause(event, a, ctx)
        subject = ctx.subject(hit.value if hit else None, hit=hit, site=st.site if st else None,
                              iteration=st.iteration if st else None)
        name = subject.name
        if d.message == "carried-state":
            fix = (f"detach it at the start of each iteration ({_detach(name, hit)}) and drop "
                   "retain_graph=True" if name else
                   "detach the carried tensor at the start of each iteration and drop retain_graph=True")
        else:
            fix = (f"{name} = {name}.detach() (or build it under torch.no_grad()) and drop "
                   "retain_graph=True" if name else
                   "detach the re-used tensor (or build it under torch.no_grad()) and drop retain_graph=True")
        retained = ctx.loc(a.mark.site) if a.mark else None
        related = [Related(Role.RETAINED_BY, None, "backward", retained, a.mark.iteration if a.mark else None)]
        if subject.created_at:
            # no Role member says "what drags the old graph in": the plain value, as before
            related.append(Related(Role.CAUSE, name, None, subject.created_at, subject.created_in_iteration))
        since = st.iteration if st else (a.mark.iteration if a.mark else "?")
        f = self.finding(ctx, subject, ctx.loc(event.site), fix,
                         {"stale": len(a.members), "since": since, "growth": _growth_text(d.facts["growth"]),
                          "fix": fix, "name": display(name, "the tensor carried over")},
                         related, message=d.message,
                         graph=snapshot(event, a, name, f"GG102: {name or 'retained graph'}", ctx.creation))
        f.details["growth"] = d.facts["series"].details
        return f

    # ---- one line's retained backwards re-walking a growing graph inside one iteration -----
    def _rewalk(self, event: BackwardCall, ev: Evidence, key: tuple | None) -> int | None:
        """Follow this line's retained backwards within the iteration; the walk index of the
        first node (nearest the root) an earlier retained backward of this line and iteration
        already ran through, once REWALKS such calls in a row each walked a larger graph."""
        if key is None:
            return None
        scan, it = event.scan, ev.iteration
        n = len(scan.nodes)
        first = None
        for i in scan.marked_index:  # the nodes some earlier backward ran through (walk order)
            m = scan.marks[i]
            if m is not None and m.retained and m.iteration == it and m.site and event.site \
                    and m.site[0][:2] == event.site[0][:2]:
                first = i
                break
        prev = self.rewalks.get(key)
        if first is None or prev is None or prev[0] != it or n <= prev[2]:
            self.rewalks[key] = (it, 0, n) if len(self.rewalks) < MAX_SITES or key in self.rewalks else prev
            return None
        count = prev[1] + 1
        self.rewalks[key] = (it, count, n)
        return first if count >= REWALKS else None

    def _describe_rewalk(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        """The re-walked part named as the user holds it (the list of per-step outputs, or the
        tensor itself), and the fix: one backward on the summed losses."""
        first = d.facts["first"]
        node = d.subject
        st = ctx.stamp(node)
        hit = ctx.name_of_node(node)
        name = hit.name.split("[", 1)[0] if hit is not None and hit.scope == "element" else None
        if hit is not None and name is not None:
            holder = resolve(name, ctx.frames())
            subject = ctx.subject(holder.value if holder else None, hit=holder or hit,
                                  site=st.site if st else None, iteration=st.iteration if st else None)
            subject = dataclasses.replace(subject, name=name, kind="tensor")
        elif hit is not None:
            subject = ctx.subject(hit.value, hit=hit, site=st.site if st else None,
                                  iteration=st.iteration if st else None)
        else:
            made = name_where_made(node, st.site if st else None)
            subject = ctx.subject(None, site=st.site if st else None, iteration=st.iteration if st else None)
            if made is not None:
                subject = dataclasses.replace(subject, name=made[0], created_at=(
                    ctx.loc((made[1],)) if made[1] is not None else subject.created_at))
        name = subject.name
        calls = d.facts["calls"]
        fix = ("Sum the losses and call backward once after the loop, or take each loss's "
               "gradients with torch.autograd.grad(loss, params, retain_graph=True) and accumulate "
               f"them; every call re-runs {display(name, 'the shared graph')} from the start")
        m = event.scan.marks[first]
        related = [Related(Role.RETAINED_BY, None, "backward", ctx.loc(m.site) if m else None,
                           m.iteration if m else None)]
        related += ctx.fix_at(ctx.loc(event.site), name, "one backward on the summed losses")
        growth = f" ({calls} calls on this line in iteration {ctx.iteration}, {len(event.scan.nodes)} nodes walked now)"
        f = self.finding(ctx, subject, ctx.loc(event.site), fix,
                         {"stale": len(event.scan.marked_index) - len(event.scan.leaf_index & set(event.scan.marked_index)),
                          "since": ctx.iteration, "growth": growth,
                          "fix": fix, "name": display(name, "the shared graph")}, related, message=d.message,
                         graph=snapshot_with_roles(
                             event, {i: ["stale"] for i in event.scan.marked_index[:MAX_SNAPSHOT_NODES]},
                             first, name, f"GG102: {name or 'shared graph'} re-walked", ctx.creation))
        f.details["growth"] = d.facts["series"].details
        return f

    def _series(self, line: tuple, before: tuple[int, int] | None, event: BackwardCall,
                iteration: int) -> Growth:
        """The growth series of a line being reported: the size its graph had at its previous
        retained call, and now; later calls of the line add to it (detect())."""
        series = self.series[line] = Growth()
        if before is not None and before[0] < iteration:
            series.add(*before)
        series.add(iteration, len(event.scan.nodes), truncated=event.scan.truncated)
        return series

    def _growth(self, event: BackwardCall, iteration: int) -> tuple[int, int, float, bool] | None:
        """How the graph this backward line walks changed since its last retained call: (nodes
        then, nodes now, nodes added per iteration, walk cut at its limit), or None (not grown)."""
        key = site_key(event.site[:1]) if event.site else None
        n = len(event.scan.nodes)
        prev = self.walked.get(key) if key is not None else None
        if key is not None and (key in self.walked or len(self.walked) < MAX_SITES):
            self.walked[key] = (iteration, n)
        if prev is None or prev[0] >= iteration or n <= prev[1]:
            return None
        return prev[1], n, (n - prev[1]) / (iteration - prev[0]), bool(event.scan.truncated)

    @staticmethod
    def _cause(event: BackwardCall, a: StaleAnalysis, ctx: RuleContext) -> tuple[NameHit | None, Any]:
        """The variable that holds the old part: for a carried state, the variable that now holds
        this iteration's value made by the same line (as GG004 names it); else the old tensor."""
        node = event.scan.nodes[a.boundary]
        st = ctx.stamp(node)
        hit = None
        if a.carried and st is not None:
            key = site_key(st.site)
            hit = find_name(lambda v: isinstance(v, torch.Tensor) and v.grad_fn is not None
                            and (s := ctx.stamp(v.grad_fn)) is not None and site_key(s.site) == key)
        if hit is None and not a.carried:
            oldest = _oldest_named(event, a, ctx)
            if oldest is not None:
                hit, st = oldest
        if hit is None:
            hit = ctx.name_of_node(node)
        return hit, st


def _growth_text(growth: tuple[int, int, float, bool] | None) -> str:
    """The growth clause of the sentence (empty when the walked graph did not grow)."""
    if growth is None:
        return ""
    then, now, per, truncated = growth
    more = "+" if truncated else ""
    return f" (the graph it walks grew from {then} to {now}{more} nodes, +{per:.0f} per iteration)"


def _detach(name: str, hit: NameHit | None) -> str:
    """`h = h.detach()`; for an element of a tuple (an LSTM's `(h, c)`), the whole tuple."""
    m = re.fullmatch(r"(.+)\[-?\d+\]", name)
    if m and hit is not None and hit.scope == "element":
        base = m.group(1)
        holder = find_name(lambda v: isinstance(v, tuple) and any(x is hit.value for x in v))
        if holder is not None and holder.name == base:
            return f"{base} = tuple(t.detach() for t in {base})"
    return f"{name} = {name}.detach()"


def _oldest_named(event: BackwardCall, a: StaleAnalysis, ctx: RuleContext) -> tuple[NameHit, Any] | None:
    """The oldest tensor of the re-run part that the user still holds under the name its creation
    line assigned (`encoded = encoder(...)`, which every stored item hangs on), with its stamp: what
    the kept graphs were built on. One name look-up for all live tensors, then a pass over the
    stale nodes."""
    named: dict[int, list[NameHit]] = {}
    for h in find_names(lambda v: isinstance(v, torch.Tensor) and v.grad_fn is not None):
        if h.scope in ("local", "global"):
            named.setdefault(id(h.value.grad_fn), []).append(h)
    if not named:
        return None
    best: tuple[int, NameHit, Any] | None = None
    nodes = event.scan.nodes
    for i in a.members:
        hits = named.get(id(nodes[i]))
        st = ctx.stamp(nodes[i]) if hits else None
        if st is None or not st.site or (best is not None and st.epoch >= best[0]):
            continue
        for h in hits:
            made = [fr for fr in st.site if fr.file == h.frame.file and fr.function == h.frame.function]
            if made and h.name in assigned_targets(made[0].file, made[0].line):
                best = (st.epoch, h, st)
                break
    return (best[1], best[2]) if best is not None else None
