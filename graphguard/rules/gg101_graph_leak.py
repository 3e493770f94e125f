"""GG101 graph-leak: tensors with autograd history outlive their iteration and pile up."""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Any


from ..capture.graph import walk
from ..lookup.holders import Holder, find_holders
from ..lookup.module_state import module_state_holders
from ..capture.state import Stamp
from ..lookup.source import assignment_lines, enclosing_scope, growth_lines, statement_at
from ..events import BackwardCall, GuardExit, StepDone
from ..model import Finding, Frame, Message, SourceLoc, Subject
from .base import Rule, display
from .context import RuleContext
from .shared.growth import Growth
from .shared.rounds import rounds_spanned

__all__ = ["GraphLeak"]

WALK = 4000  # nodes walked per holder
BUDGET = 20000  # nodes walked per check, all holders together
FIRST = 8  # look at every iteration end up to this one; then at powers of two, then every EVERY
EVERY = 512
MIN_SPAN = 3  # distinct iterations a holder must span: one kept loss, or two, is no pile
FOLLOW_UPS = 3  # extra looks at the next iteration ends for a holder that may be growing


@dataclass
class _Verdict:
    """What one holder keeps alive (plain data)."""

    spans: int  # distinct iterations whose graph nodes it keeps
    nodes: int  # graph nodes walked (excluding parameters' accumulators)
    truncated: bool
    site: Any  # the stamp site of its newest accumulating node, when recorded
    scalar: bool  # the held values are single numbers (`.item()` works)
    suspect: bool  # may be growing: a kept graph no backward used, or several graphs in a list
    growth: Growth | None = None  # nodes kept per iteration, when it is reported


class GraphLeak(Rule):
    """## What it does
    At the end of iterations (every one at first, then ever more rarely), looks at the tensors and
    containers the training loop holds by name: a running sum (`total_loss += loss`), a list
    (`losses.append(loss)`), a dict of running sums, an attribute of a logger. A holder whose
    autograd graph mixes nodes made in three or more different iterations is piling up graphs:
    it is reported with the line that accumulates and the nodes kept alive per iteration.

    ## Why is this bad?
    A tensor that still has a `grad_fn` keeps its whole graph alive (every node, and any saved
    tensor not yet freed). Summing losses for logging without `.item()` keeps every iteration's
    graph: memory grows steadily until the run dies, often hours in, far from the line at fault.

    ## Example
    ```python
    total_loss = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward(); opt.step(); opt.zero_grad()
        total_loss += loss                  # keeps every iteration's graph
    ```

    ## Use instead
    ```python
        total_loss += loss.item()           # a Python number; or loss.detach() to stay a tensor
    ```

    ## Known problems
    Holders are found through the names visible in the training loop's frames (locals, globals,
    `self` attributes, one level into containers and helper objects, and the buffers and tensor
    attributes of every submodule of a module they name: `model.bn.running_mean` updated with
    grad mode on); a graph kept only by an object reachable in no other way is not seen. A window of a few recent losses kept with their
    graphs (`deque(maxlen=10)`) is reported too: it is bounded, but still keeps those graphs.
    Without any optimizer, iterations are counted by graph-freeing backward calls; an optimizer
    made before the guard was entered is only known from its first step.
    """

    code = "GG101"
    slug = "graph-leak"
    severity = "warning"
    summary = "tensors with autograd history outlive their iteration and pile up (memory grows)"
    # one message per kind of holder (lookup/holders.py, lookup/module_state.py): what keeps the
    # graphs is told by the holder, so is the fix
    messages = (
        Message("kept-tensor", "warning",
                "{name} keeps the autograd graphs of {spans} iterations alive ({nodes} graph nodes, "
                "about {per} per iteration) and grows every iteration: each iteration adds a "
                "tensor that still has its grad_fn. {fix}",
                "a tensor the loop keeps (a running sum, `total_loss += loss`) collects every "
                "iteration's graph"),
        Message("kept-in-container", "warning",
                "{name} keeps the autograd graphs of {spans} iterations alive ({nodes} graph nodes, "
                "about {per} per iteration) and grows every iteration: it holds {length} entries, "
                "{with_grad_fn} of them tensors with a grad_fn. {fix}",
                "a list, dict or other container the loop keeps collects tensors with their graphs "
                "(`losses.append(loss)`)"),
        Message("module-state", "warning",
                "{name} keeps the autograd graphs of {spans} iterations alive ({nodes} graph nodes, "
                "about {per} per iteration) and grows every iteration: each iteration's value is "
                "computed from the last one with grad mode on, and no backward runs through it. {fix}",
                "a module's own state (a running statistic) updated with grad mode on chains every "
                "iteration's graph"),
    )
    events = (StepDone, BackwardCall, GuardExit)
    # A look is due at set iterations (`_next_due`); a skimmed iteration end only postpones it to
    # the next judged one (at most one sampling period later), where it is still due.
    skim_skip = (StepDone, BackwardCall)

    def __init__(self) -> None:
        self.checked_at = 0  # the last iteration at which holders were looked at
        self.reported: set[str] = set()  # holder names already reported
        self.follow: dict[str, int] = {}  # suspect holder -> follow-up looks left before the next due one
        self.series: dict[str, Growth] = {}  # reported holder -> graph nodes it keeps, per look

    def check(self, event: Any, ctx: RuleContext) -> list[Finding] | None:
        it = ctx.iteration
        if isinstance(event, BackwardCall):
            # no optimizer at all: iterations end at graph-freeing backward calls (DESIGN.md)
            if ctx.optimizer_steps() or ctx.any_optimized():
                return None
        elif isinstance(event, GuardExit):
            if it == self.checked_at or it < MIN_SPAN - 1:
                return None
            return self._look(ctx, it)
        if it <= self.checked_at or not (it >= _next_due(self.checked_at) or any(self.follow.values())):
            return None
        return self._look(ctx, it)

    # ---- looking at the holders ------------------------------------------------------------------
    def _look(self, ctx: RuleContext, it: int) -> list[Finding] | None:
        due = it >= _next_due(self.checked_at)
        self.checked_at = it
        budget = [BUDGET]
        out = []
        grown: list[Holder] = []  # reported holders whose growth plot gets a point
        holders = find_holders()
        # and the modules' own state (a running statistic updated with grad mode on): no name in
        # the frames reaches a submodule's buffer, and the loss never reads it
        holders += module_state_holders(skip={id(t) for h in holders for t in h.tensors})
        for h in holders:
            if h.name in self.series and not self.series[h.name].stopped:
                grown.append(h)
            if h.name in self.reported or budget[0] <= 0 or ctx.superseded(self, name=h.name):
                continue
            v = self._judge(h, ctx, it, budget)
            if v is not None and v.spans >= MIN_SPAN:
                self.reported.add(h.name)
                self.follow.pop(h.name, None)
                out.append(self._finding(ctx, h, v))
            elif v is not None and v.suspect:
                # a graph kept past its iteration: look again at the next iteration ends (a few
                # times), since each look can tell at most one new age apart where nothing was
                # recorded (light mode)
                left = self.follow.get(h.name)
                self.follow[h.name] = FOLLOW_UPS if left is None or due else max(0, left - 1)
                if self.follow[h.name]:
                    ctx.keep_judging(1)  # the next iteration end too, skimmed or not
            else:
                self.follow.pop(h.name, None)
        for h in grown:  # with what is left of the budget: judging the others comes first; a
            if budget[0] >= WALK:  # whole walk, so that a cut walk means a graph past WALK
                self._count(h, it - 1, budget)
        return out

    def _judge(self, h: Holder, ctx: RuleContext, it: int, budget: list[int]) -> _Verdict | None:
        stamp_key = ctx.stamp_key
        seen_key, leak_key = stamp_key + ".seen", stamp_key + ".leak"
        latest = it - 1  # the iteration that just ended
        roots = []
        single = h.kind in ("tensor", "state")  # one tensor, not a container's elements
        for t in h.tensors:
            m = ctx.mark_of(t.grad_fn)
            if h.kind == "tensor" and m is not None and m.iteration >= latest and \
                    ctx.mark_key in t.grad_fn.metadata:
                return None  # this iteration's own graph (its backward just ran through it)
            # a mark found only by sequence number is a candidate: a running sum added to before
            # the backward (`loss_sum += loss`, then `(loss / n).backward()`) lies in that
            # backward's range without being traversed; its walk below tells the iterations apart
            # a module's state is never what backward starts from: a mark there may only be the
            # range of the backward it was made next to (NOTE [marks by sequence number])
            roots.append(t.grad_fn)
        w = walk(roots, min(WALK, budget[0]))
        budget[0] -= len(w.nodes)
        ages: list[int] = []
        counted: list[int] = []
        spans: set[int] = set()
        site = None
        nodes = 0
        for i, node in enumerate(w.nodes):
            md = node.metadata
            st = md.get(stamp_key)
            if isinstance(st, Stamp):
                age = st.iteration
            else:
                # unrecorded (light mode, or made inside an op): as old as the node that led
                # here, or as first seen by an earlier look; remembered on the node itself
                age = md.get(seen_key)
                if age is None:
                    p = w.parent[i]
                    age = ages[p] if p >= 0 else latest
                    md[seen_key] = age
            ages.append(age)
            if type(node).__name__ == "AccumulateGrad":
                continue  # a parameter's accumulator is shared by every iteration's graph
            nodes += 1
            m = ctx.mark_of(node, md)
            if single and m is not None and m.iteration >= latest:
                continue  # traversed by the backward that just ran: current, or shared structure
            if h.kind == "container" and w.parent[i] != -1:
                continue  # a list's span is told by its elements, not by what each one hangs on
            if md.get(leak_key, h.name) != h.name:
                return None  # a graph already reported through another holder (`avg = total / n`)
            spans.add(age)
            counted.append(i)
            if site is None and isinstance(st, Stamp) and m is None:
                site = st.site  # the newest recorded node no backward ran through: the accumulation
        growth = None
        # spans counted in training steps: one step of several optimizers is several iterations
        steps = rounds_spanned(spans, ctx) if len(spans) >= MIN_SPAN else len(spans)
        if steps >= MIN_SPAN:
            for i in counted:  # remembered on the nodes, which die with the leak
                w.nodes[i].metadata[leak_key] = h.name
            # the growth plot's first points: the nodes kept now, by the iteration that made them
            growth = self.series[h.name] = Growth()
            growth.add_ages((ages[i] for i, n in enumerate(w.nodes)
                             if type(n).__name__ != "AccumulateGrad"), latest)
            if w.truncated:
                growth.add(latest, nodes, truncated=True)
        scalar = all(t.numel() == 1 for t in h.tensors)
        # a tensor is suspect when no backward ran through its newest node: unmarked, or marked
        # only by sequence number (a candidate) while it holds nodes of earlier iterations
        suspect = (len(roots) > 1 if h.kind == "container" else True if h.kind == "state"
                   else ctx.mark_of(roots[0]) is None
                   or (bool(spans) and roots[0] is not None and ctx.mark_key not in roots[0].metadata))
        return _Verdict(steps, nodes, w.truncated, site, scalar, suspect, growth)

    def _count(self, h: Holder, latest: int, budget: list[int]) -> None:
        """One more point of a reported holder's growth plot: the graph nodes it keeps now."""
        w = walk([t.grad_fn for t in h.tensors], WALK)
        budget[0] -= len(w.nodes)
        n = sum(type(node).__name__ != "AccumulateGrad" for node in w.nodes)
        self.series[h.name].add(latest, n, truncated=w.truncated)

    # ---- wording ---------------------------------------------------------------------------------
    def _finding(self, ctx: RuleContext, h: Holder, v: _Verdict) -> Finding:
        loc = self._where(h, v)
        per = max(1, v.nodes // max(1, v.spans))
        nodes = f"{v.nodes}+" if v.truncated else str(v.nodes)
        message = ("kept-in-container" if h.kind == "container" else
                   "module-state" if h.kind == "state" else "kept-tensor")
        fix = _fix(loc, h.name, v.scalar)
        subject = Subject(h.name, "tensor" if h.kind == "state" else h.kind, _summary(h), _made(h), None)
        f = self.finding(ctx, subject, loc, fix,
                         {"spans": v.spans, "nodes": nodes, "per": per, "length": h.length,
                          "with_grad_fn": len(h.tensors), "fix": fix,
                          "name": display(h.name, "A variable")}, message=message)
        if v.growth is not None:
            f.details["growth"] = v.growth.details
        return f

    @staticmethod
    def _where(h: Holder, v: _Verdict) -> SourceLoc:
        """The line that grows the holder: the recorded accumulation when it names the holder,
        else the line of the user's code that appends to it or adds into it."""
        lines = growth_lines(h.frame.file, h.name)
        if v.site:
            stamped = v.site[0]
            if not lines or stamped.file != h.frame.file or stamped.line in lines:
                return SourceLoc.from_frame(stamped)
        if lines:
            # prefer a line inside the function that holds the name
            scope = enclosing_scope(h.frame.file, h.frame.line)
            inside = [n for n in lines if scope is not None and
                      getattr(scope, "lineno", 0) <= n <= (getattr(scope, "end_lineno", None) or 10 ** 9)]
            n = (inside or lines)[0]
            fn = enclosing_scope(h.frame.file, n)
            return SourceLoc.from_frame(Frame(h.frame.file, n, getattr(fn, "name", "<module>")))
        return SourceLoc.from_frame(h.frame)


def _next_due(last: int) -> int:
    """The first iteration end after `last` at which a look is due: 1..8, 16, 32, ..., 512, then
    every 512th. A leak is seen within a few iterations of starting early, and within twice its
    age (at most 512) when it starts late; the cost (a few ms per look) vanishes over the run.
    An iteration end that is not judged (skimmed) leaves the look due at the next one that is."""
    if last < FIRST:
        return last + 1
    power = 1 << last.bit_length()  # the next power of two above `last`
    return min(power, (last // EVERY + 1) * EVERY)


def _made(h: Holder) -> SourceLoc | None:
    """Where a plain variable holder is first assigned in its function (`total_loss = 0`)."""
    if not h.name.isidentifier():
        return None
    lines = assignment_lines(h.frame.file, h.frame.line, h.name)
    return SourceLoc.from_frame(Frame(h.frame.file, lines[0], h.frame.function)) if lines else None


def _summary(h: Holder) -> str:
    from ..capture.graph import summarize

    if h.kind in ("tensor", "state"):
        return summarize(h.tensors[0])
    return f"{h.length} entries, {len(h.tensors)} with grad_fn, e.g. {summarize(h.tensors[-1])}"


def _fix(loc: SourceLoc, name: str, scalar: bool) -> str:
    """The accumulating line rewritten to store `.item()` (or `.detach()`) of the value."""
    how = "item" if scalar else "detach"
    generic = f"store {name}'s values with .{how}() so that no graph is kept"
    found = statement_at(loc.file, loc.line)
    if found is None:
        return generic
    stmt = copy.deepcopy(found)  # rewritten below: the parsed statement is shared
    if isinstance(stmt, ast.AugAssign):
        stmt.value = _wrapped(stmt.value, how)
    elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.value, ast.BinOp) and ast.unparse(stmt.value.left) == ast.unparse(stmt.targets[0]):
        stmt.value.right = _wrapped(stmt.value.right, how)  # `total = total + loss`
    elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        stmt.value = _wrapped(stmt.value, how)
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and stmt.value.args:
        stmt.value.args[-1] = _wrapped(stmt.value.args[-1], how)  # `losses.append(loss)`
    else:
        return generic
    return f"{ast.unparse(stmt)}  (.{how}() keeps the value, not the graph)"


def _wrapped(expr: ast.expr, how: str) -> ast.expr:
    if isinstance(expr, ast.Tuple):
        return ast.Tuple([_wrapped(e, how) for e in expr.elts], ast.Load())
    return ast.Call(ast.Attribute(expr, how, ast.Load()), [], [])
