"""GG101 graph-leak: tensors with autograd history outlive their iteration and pile up."""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from typing import Any

import torch

from ..capture.graph import walk
from ..capture.kept import Held
from ..capture.state import Stamp
from ..lookup.holders import Holder, find_holders
from ..lookup.names import find_name
from ..lookup.module_state import module_state_holders
from ..lookup.source import assignment_lines, enclosing_scope, growth_lines, statement_at
from ..events import BackwardCall, GuardExit, StepDone
from ..model import Finding, Frame, Message, SourceLoc, Subject
from .base import Detection, Rule, display
from .context import Evidence, RuleContext
from .shared.growth import Growth
from .shared.rounds import rounds_spanned

__all__ = ["GraphLeak"]

WALK = 4000  # nodes walked per holder
BUDGET = 20000  # nodes walked per look, all holders together
FIRST = 8  # look at every iteration end up to this one; then at powers of two, then every EVERY
EVERY = 512
MIN_SPAN = 3  # distinct iterations a holder must span: one kept loss, or two, is no pile
FOLLOW_UPS = 3  # extra looks at the next iteration ends while something may be growing


@dataclass
class _Verdict:
    """What one live tensor, or one container of them, keeps alive (plain data, and the
    tensors themselves while the event is judged)."""

    kind: str  # tensor | container | state (a module's buffer or attribute)
    tensors: list[torch.Tensor]  # the tensor, or the container's newest elements with history
    spans: int  # distinct training steps whose graph nodes it keeps
    nodes: int  # graph nodes counted (no backward of the last iteration ran through them)
    counted: list[Any] = field(default_factory=list)  # those nodes
    truncated: bool = False
    site: Any = None  # the stamp site of its newest accumulating node, when recorded
    made: Any = None  # the stamp site of its newest node (element), backward run through or not
    suspect: bool = False  # may be growing: a kept graph no backward used, or several graphs in a list
    reported: int | None = None  # the token of the leak it belongs to, when already reported
    container: Any = None  # the container (kind container)
    owner: tuple[Any, str] | None = None  # (module, attribute) (kind state)
    growth: Growth | None = None


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
    Every live tensor with history is looked at, whoever holds it (a local, an attribute, a
    library's container, a closure), and a container is told by what refers to its tensors: a
    list, deque, tuple or set, or a dict keyed by something other than names; a dict of names
    (`stats['loss']`) holds each value separately. The name in the report is the one the
    training loop's frames give the holder (locals, globals, `self` attributes, one level into
    containers and helper objects, a module's buffers and attributes); a holder no name reaches
    is described by its type and creation line instead. A window of a few recent losses kept
    with their graphs (`deque(maxlen=10)`) is reported too: it is bounded, but still keeps those
    graphs. Without any optimizer, iterations are counted by graph-freeing backward calls; an
    optimizer made before the guard was entered is only known from its first step. A tensor
    made long before and given history in place later (`total += loss` on a tensor made before
    the loop) is seen at the next of the rare looks over the whole heap.
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
        self.checked_at = 0  # the last iteration at which the live graphs were looked at
        self.follow = 0  # follow-up looks left before the next due one
        self.tokens = 0  # leaks reported so far; each one's token marks its nodes
        self.series: dict[int, Growth] = {}  # leak token -> graph nodes it keeps, per look
        # id(container) -> its length at the last look (plain ints; ids of containers seen then)
        self.lengths: dict[int, int] = {}
        self.seen_lengths: dict[int, int] = {}

    # ---- detection: the live tensors and their graphs ----------------------------------------
    def detect(self, event: Any, ev: Evidence) -> list[Detection] | None:
        it = ev.iteration
        if isinstance(event, BackwardCall):
            # no optimizer at all: iterations end at graph-freeing backward calls (DESIGN.md)
            if ev.optimizer_steps() or ev.any_optimized():
                return None
        elif isinstance(event, GuardExit):
            if it == self.checked_at or it < MIN_SPAN - 1:
                return None
            return self._look(ev, it)
        if it <= self.checked_at or not (it >= _next_due(self.checked_at) or self.follow):
            return None
        return self._look(ev, it)

    def _look(self, ev: Evidence, it: int) -> list[Detection]:
        due = it >= _next_due(self.checked_at)
        since = self.checked_at  # the previous look: what was made after it is new
        self.checked_at = it
        latest = it - 1  # the iteration that just ended
        budget = [BUDGET]
        # every live tensor with history (the young generations, and what the collector callback
        # noted on its way to the old one: capture/kept.KeptWatch)
        live = ev.live_graph_tensors()
        # values made since the last look (before any age is remembered on them)
        fresh = {id(t.grad_fn) for t in live if self._fresh(t.grad_fn, ev, since)}
        verdicts = [v for v in (self._single(t, ev, latest, fresh, budget) for t in live) if v is not None]
        # values of earlier iterations (by age, or by the backward that last ran through them),
        # and values no stamp dates (light mode) first seen now: what holds them may be a pile
        olds = [t for t in live if self._earlier(t.grad_fn, ev, latest, fresh)]
        if len(olds) >= MIN_SPAN - 1:
            for held in ev.containers_holding(olds, own=(live, *(v.tensors for v in verdicts))):
                v = self._held(held, ev, latest)
                if v is not None:
                    verdicts.append(v)
        del live, olds
        self.lengths, self.seen_lengths = self.seen_lengths, {}
        out: list[Detection] = []
        roots: set[int] = set()  # the newest nodes of the leaks found in this look
        # the smallest first: of `total` and `mean = total / n`, the accumulator is reported, and
        # `mean`, whose graph holds `total`'s newest node, is the same leak. Three running sums of
        # one loss's parts share those graphs but each grows its own chain: three leaks.
        for v in sorted(verdicts, key=lambda v: v.nodes):
            if v.reported is not None or v.spans < MIN_SPAN or \
                    any(id(n) in roots for n in v.counted):
                continue
            roots.update(id(t.grad_fn) for t in v.tensors)
            out.append(self._report(v, ev, latest))
        self._follow_up(ev, due, any(v.suspect and v.reported is None for v in verdicts))
        self._count(verdicts, latest, budget)
        return out

    def _follow_up(self, ev: Evidence, due: bool, suspect: bool) -> None:
        """A graph kept past its iteration: look again at the next iteration ends (a few times),
        since each look can tell at most one new age apart where nothing was recorded (light
        mode)."""
        self.follow = (FOLLOW_UPS if due else max(0, self.follow - 1)) if suspect else 0
        if self.follow:
            ev.keep_judging(1)  # the next iteration end too, skimmed or not

    def _age(self, node: Any, ev: Evidence, fallback: int) -> int:
        """The iteration that made `node`: its stamp, else when a look first saw it (light
        mode, or made inside an op: remembered on the node), else `fallback`."""
        md = node.metadata
        st = md.get(ev.stamp_key)
        if isinstance(st, Stamp):
            return st.iteration
        age = md.get(ev.stamp_key + ".seen")
        if age is None:
            age = md[ev.stamp_key + ".seen"] = fallback
        return age

    @staticmethod
    def _earlier(root: Any, ev: Evidence, latest: int, fresh: set[int]) -> bool:
        """Whether a live value is not the last iteration's own: made or last run through by a
        backward in an earlier one, or undated (light mode) and new since the last look. The
        last iteration's own values get no age remembered: they may be kept, and only then
        their age matters."""
        m = ev.mark_of(root)
        if m is not None:
            return m.iteration < latest or ev.mark_key not in root.metadata
        st = root.metadata.get(ev.stamp_key)
        if isinstance(st, Stamp):
            return st.iteration < latest
        return id(root) in fresh or root.metadata.get(ev.stamp_key + ".seen", latest) < latest

    @staticmethod
    def _fresh(node: Any, ev: Evidence, since: int) -> bool:
        """Whether `node` was made after the look at iteration `since`: by its stamp, else by
        not having been seen by a look yet (call before `_age`)."""
        md = node.metadata
        st = md.get(ev.stamp_key)
        if isinstance(st, Stamp):
            return st.iteration >= since
        return ev.stamp_key + ".seen" not in md

    def _single(self, t: torch.Tensor, ev: Evidence, latest: int, fresh: set[int],
                budget: list[int]) -> _Verdict | None:
        """What one tensor's graph keeps: the iterations of the nodes no backward of the last
        iteration ran through. The walk stops at a node that backward did run through (all it
        leads to was run through as well)."""
        root = t.grad_fn
        if root is None or budget[0] <= 0:
            return None
        mark_key, leak_key = ev.mark_key, ev.stamp_key + ".leak"
        m = ev.mark_of(root)
        if m is not None and m.iteration >= latest and mark_key in root.metadata:
            return None  # this iteration's own graph (its backward just ran through it)
        nodes, ages, counted = [root], [self._age(root, ev, latest)], []
        seen = {id(root)}
        spans: set[int] = set()
        site, reported, truncated = None, None, False
        limit = min(WALK, budget[0])
        i = 0
        while i < len(nodes):
            node, age = nodes[i], ages[i]
            i += 1
            md = node.metadata
            m = ev.mark_of(node, md)
            if m is not None and m.iteration >= latest:
                if mark_key in md:
                    continue  # run through by the last backward: current, or shared structure
            elif type(node).__name__ != "AccumulateGrad":  # shared by every iteration's graph
                if md.get(leak_key) is not None:
                    reported = md[leak_key]
                spans.add(age)
                counted.append(node)
                st = md.get(ev.stamp_key)
                if site is None and isinstance(st, Stamp) and m is None:
                    site = st.site  # the newest recorded node no backward ran through
            for nxt, _ in node.next_functions:
                if nxt is not None and id(nxt) not in seen:
                    if len(nodes) >= limit:
                        truncated = True
                        break
                    seen.add(id(nxt))
                    nodes.append(nxt)
                    ages.append(self._age(nxt, ev, age))
        budget[0] -= len(nodes)
        # suspect: made since the last look, or already holding nodes of two iterations (a value
        # that keeps one graph and stays the same tensor, one kept from before the guard, is not
        # growing; a sum added to once per training step of several optimizers is), and no
        # backward ran through its newest node (unmarked, or marked only by sequence number)
        suspect = (id(root) in fresh or len(spans) >= 2) and (ev.mark_of(root) is None or (bool(spans) and mark_key not in root.metadata))
        st = root.metadata.get(ev.stamp_key)
        made = st.site if isinstance(st, Stamp) else None
        return _Verdict("tensor", [t], rounds_spanned(spans, ev) if len(spans) >= MIN_SPAN else len(spans),
                        len(counted), counted, truncated, site, made, suspect, reported)

    def _held(self, held: Held, ev: Evidence, latest: int) -> _Verdict | None:
        """What a container keeps: the iterations its elements were made in (each element's own
        graph is its own; a list's span is told by its elements)."""
        leak_key = ev.stamp_key + ".leak"
        roots = [t.grad_fn for t in held.tensors]
        # growing: longer than at the last look (a container first seen counts as grown)
        before = self.lengths.get(id(held.container))
        self.seen_lengths[id(held.container)] = held.length
        new = before is None or held.length > before
        spans = {self._age(r, ev, latest) for r in roots}
        reported = next((r.metadata[leak_key] for r in roots if r.metadata.get(leak_key) is not None), None)
        # the newest recorded element no backward ran through (a loss that did is not what
        # accumulates: the append line is found from the holder's name)
        site = next((st.site for r in reversed(roots) if ev.mark_of(r) is None
                     and isinstance(st := r.metadata.get(ev.stamp_key), Stamp)), None)
        made = next((st.site for r in reversed(roots)
                     if isinstance(st := r.metadata.get(ev.stamp_key), Stamp)), None)
        steps = rounds_spanned(spans, ev) if len(spans) >= MIN_SPAN else len(spans)
        return _Verdict("container", held.tensors, steps, len(roots), roots, False, site, made,
                        len(roots) > 1 and new, reported, container=held.container)

    def _report(self, v: _Verdict, ev: Evidence, latest: int) -> Detection:
        """A leak found: its newest nodes carry its token, its growth series starts with the
        nodes kept now by the iteration that made them."""
        self.tokens += 1
        token = v.reported = self.tokens
        # on the holder's newest nodes (they die with the leak): a later look whose graph holds
        # one of them is this leak again (the running sum's next value, `total / n`)
        for t in v.tensors:
            t.grad_fn.metadata[ev.stamp_key + ".leak"] = token
        if v.kind == "tensor" and (owner := ev.owning_module(v.tensors[0])) is not None:
            v.kind, v.owner = "state", owner
        w = walk([t.grad_fn for t in v.tensors], WALK)
        real = [n for n in w.nodes if type(n).__name__ != "AccumulateGrad"]
        if v.kind == "container":
            v.nodes = len(real)
        v.truncated = v.truncated or w.truncated
        growth = self.series[token] = v.growth = Growth()
        growth.add_ages((self._age(n, ev, latest) for n in real), latest)
        if w.truncated:
            growth.add(latest, len(real), truncated=True)
        message = {"container": "kept-in-container", "state": "module-state"}.get(v.kind, "kept-tensor")
        return Detection(message, v)

    def _count(self, verdicts: list[_Verdict], latest: int, budget: list[int]) -> None:
        """One more point of each reported leak's growth plot: the graph nodes its holder keeps
        now (the smallest holder that carries its token), with what is left of the budget."""
        best: dict[int, _Verdict] = {}
        for v in verdicts:
            if v.reported is not None and v.growth is None and \
                    (v.reported not in best or v.nodes < best[v.reported].nodes):
                best[v.reported] = v
        for token, v in best.items():
            series = self.series.get(token)
            if series is None or series.stopped or budget[0] < WALK:
                continue  # a whole walk, so that a cut walk means a graph past WALK
            w = walk([t.grad_fn for t in v.tensors], WALK)
            budget[0] -= len(w.nodes)
            series.add(latest, sum(type(n).__name__ != "AccumulateGrad" for n in w.nodes),
                       truncated=w.truncated)

    # ---- description: the holder's name, the accumulating line, the fix ----------------------
    def describe(self, d: Detection, event: Any, ctx: RuleContext) -> Finding | None:
        v: _Verdict = d.subject
        h = _holder(v)
        name = h.name if h is not None else None
        if name is not None and ctx.superseded(self, name=name):
            return None
        loc = self._where(h, v)
        per = max(1, v.nodes // max(1, v.spans))
        nodes = f"{v.nodes}+" if v.truncated else str(v.nodes)
        scalar = all(t.numel() == 1 for t in v.tensors)
        label = name or _unnamed(v)
        fix = _fix(loc, label, scalar) if loc is not None else \
            f"store {label}'s values with .{'item' if scalar else 'detach'}() so that no graph is kept"
        kind = "tensor" if v.kind == "state" else v.kind
        subject = Subject(name, kind, _summary(v), _made(h) if h is not None else _stamped(v), None)
        length = len(v.container) if v.container is not None else len(v.tensors)
        f = self.finding(ctx, subject, loc, fix,
                         {"spans": v.spans, "nodes": nodes, "per": per, "length": length,
                          "with_grad_fn": len(v.tensors), "fix": fix,
                          "name": display(name, _unnamed(v))}, message=d.message)
        if v.growth is not None:
            f.details["growth"] = v.growth.details
        return f

    @staticmethod
    def _where(h: Holder | None, v: _Verdict) -> SourceLoc | None:
        """The line that grows the holder: the recorded accumulation when it names the holder,
        else the line of the user's code that appends to it or adds into it."""
        if h is None:  # no name: the accumulating op when recorded, else the newest element's
            site = v.site or v.made
            return SourceLoc.from_frame(site[0]) if site else None
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


def _holder(v: _Verdict) -> Holder | None:
    """The user's name for what keeps the graphs: the holder of the training loop's frames that
    holds the same tensor (or container elements), a module's state by its module's name."""
    ids = {id(t) for t in v.tensors}
    holders = find_holders()
    if v.kind == "container":
        hits = [h for h in holders if h.kind == "container" and not ids.isdisjoint(id(t) for t in h.tensors)]
        best = max(hits, key=lambda h: len(ids.intersection(id(t) for t in h.tensors)), default=None)
        if best is None:  # a container the holders' walk does not take whole (a dict by step)
            hit = find_name(lambda o: o is v.container)
            if hit is not None:
                best = Holder(hit.name, "container", hit.frame, v.tensors, len(v.container))
        return best
    for h in holders:
        if h.kind == "tensor" and h.tensors[0] is v.tensors[0]:
            return h
    if v.kind == "state":
        for h in module_state_holders(skip=set()):
            if h.tensors[0] is v.tensors[0]:
                return h
    return None


def _unnamed(v: _Verdict) -> str:
    """A holder no name reaches, described by what it is."""
    if v.owner is not None:
        return f"`{v.owner[1]}` of a {type(v.owner[0]).__name__} module"
    if v.container is not None:
        return f"A {type(v.container).__name__} of {len(v.container)} entries"
    return "A tensor"


def _stamped(v: _Verdict) -> SourceLoc | None:
    """Where an unnamed holder's newest element (or value) was made."""
    return SourceLoc.from_frame(v.made[0]) if v.made else None


def _next_due(last: int) -> int:
    """The first iteration end after `last` at which a look is due: 1..8, 16, 32, ..., 512, then
    every 512th. A leak is seen within a few iterations of starting early, and within twice its
    age (at most 512) when it starts late; a look reads the collector's young generations and
    what capture/kept.KeptWatch noted (a few ms), its rare passes over the whole heap spaced by
    their cost.
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


def _summary(v: _Verdict) -> str:
    from ..capture.graph import summarize

    if v.container is None:
        return summarize(v.tensors[0])
    return f"{len(v.container)} entries, {len(v.tensors)} with grad_fn, e.g. {summarize(v.tensors[-1])}"


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
