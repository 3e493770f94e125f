"""Analysis shared by GG001/GG003/GG004: which part of a backward's graph an earlier backward used,
and the family's one classifier (`classify`): which of the three rules, and which of its messages,
a backward that reaches such a part belongs to.

NOTE [stale family classifier] (issue 29, item 3): GG001 (a graph built once or kept from an
earlier iteration), GG003 (two backwards of one iteration through one freed part) and GG004
(state carried into the next iteration) look at the same backward and must never both report it.
Their hand-offs used to be spread over the three rules' `check`s; now `gather` collects the
run-time facts (the analysis' flags, the optimizer steps since the earlier backward, whether
this graph holds that backward's own loss) into a `StaleFacts`, and `decide` is a pure function
of those facts, so the whole family's decision is one truth table (tests/test_messages_stale.py).
Every fact comes from capture data: marks, stamps, the backwards' roots, the step trail.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...capture.scan import GraphScan
from ...capture.state import Mark
from ...capture.sites import loc_of
from .snapshot import MAX_SNAPSHOT_NODES, GraphSnapshot, call_node, snapshot_from_scan
from ...events import BackwardCall
from .accumulator import carried_loss
from .rounds import StepLog

if TYPE_CHECKING:
    from ..context import Evidence

__all__ = ["StaleAnalysis", "StaleFacts", "StaleVerdict", "analyze", "classify", "decide", "gather",
           "is_carried", "kept_only", "snapshot", "snapshot_with_roles", "site_key"]


@dataclass
class StaleAnalysis:
    """The stale part of a graph, found before backward runs."""

    kind: str  # "none" | "freed" (running it will raise) | "retained" (re-traversed, kept)
    members: set[int] = field(default_factory=set)  # walk indices of the stale nodes
    boundary: int = -1  # the old node where the old part joins the graph built after it
    marked_boundary: int = -1  # the topmost node the earlier backward itself traversed
    freed: list[int] = field(default_factory=list)  # stale nodes whose buffers are gone
    mark: Mark | None = None  # the earlier backward that traversed the boundary
    same_call_line: bool = False  # that backward was called from the line of this one
    carried: bool = False  # the line that made the stale part also made this iteration's graph
    kept: bool = False  # joined through unconsumed nodes of an earlier iteration (see is_carried)
    # the whole graph, root included, predates the earlier backward, which did not run the root:
    # two losses built together and backwarded one after the other (a loop over a dict of losses)
    built_together: bool = False
    # kept from before the earlier backward, no backward ran the join, and this graph was built
    # after it by the same code that built the part that backward freed (see _rerun)
    rerun: bool = False
    # the family's verdict on this backward (`classify`), kept with the analysis it is drawn from so
    # that the three rules asking about one event compute it once
    verdict: "StaleVerdict | None" = None


def is_carried(a: "StaleAnalysis", optimizer_steps: int, same_round: bool = False) -> bool:
    """Whether the stale part is state carried into this iteration (GG004), not a tensor built once
    (GG001) or shared by two backwards of one iteration (GG003). A value kept from an earlier
    iteration counts only once an optimizer has stepped: before any step, each graph-freeing
    backward closes an iteration, so two losses of one step would look like two iterations.
    Nor when the steps since were the other optimizers of one training step (`same_round`, see
    StepLog.same_round: a value loss backwarded and stepped before the policy loss built on the
    same forward): the value was not kept for a next step, it is this step's second loss.
    A freed part also counts, with or without a step, when the forward that built it ran again to
    build this graph (`rerun`: the next chunk of a truncated BPTT loop, one backward per chunk)."""
    return a.carried or (a.kept and optimizer_steps > 0 and not same_round) or a.rerun


def kept_only(a: "StaleAnalysis") -> bool:
    """Whether is_carried() rests on `kept` alone (the only case `same_round` decides): rules ask
    their StepLog only then."""
    return a.kept and not a.carried and not a.rerun


# ---- the family's classifier (NOTE [stale family classifier]) --------------------------------
@dataclass(frozen=True)
class StaleFacts:
    """The run-time facts the family decides on: plain booleans, so that `decide` can be tested
    as a truth table over all of them."""

    kind: str  # the analysis' kind: "none" | "freed" | "retained"
    carried: bool = False  # StaleAnalysis.carried: the lines that made the old part made new nodes
    kept: bool = False  # StaleAnalysis.kept: joined through unconsumed nodes of an earlier iteration
    rerun: bool = False  # StaleAnalysis.rerun: the freed part's forward ran again to build this graph
    stepped: bool = False  # some optimizer has stepped (before that, backwards end iterations)
    # one optimizer step ended each iteration since the earlier backward (StepLog.steps_since_mark)
    steps_known: bool = False
    # ... and those steps were one training step's several optimizers, none of them holding a
    # parameter this graph reaches (StepLog.one_round)
    one_round: bool = False
    same_call_line: bool = False  # the earlier backward was called from this backward's line
    built_together: bool = False  # the whole graph predates the earlier backward (two losses)
    holds_earlier_loss: bool = False  # this graph holds the node the earlier backward started from
    consumed_outside: bool = False  # kind "none": a node freed by a backward the guard never saw
    has_inputs: bool = False  # backward(inputs=...) / autograd.grad: only some nodes are run


@dataclass(frozen=True)
class StaleVerdict:
    """Which rule of the family reports the backward, with which of its messages (None, None:
    none of them), and the walk index of the earlier loss this graph holds (GG001 loss-carried)."""

    code: str | None = None
    message: str | None = None
    carried_at: int | None = None


NOBODY = StaleVerdict()


def decide(f: StaleFacts) -> tuple[str | None, str | None]:
    """The family's decision: (code, message name), or (None, None). A pure function of `f`.

    - carried into this iteration (is_carried): GG004, `freed` or `retained`;
    - a freed part holding the earlier backward's own loss (an accumulator never reset): GG001
      `loss-carried`;
    - a freed part the same backward line freed: two losses built together, or one line run once
      per optimizer of one training step, are GG003's; otherwise an earlier iteration's graph,
      GG001 `freed`;
    - a freed part another line's backward freed: GG001 `freed` when an optimizer step of a
      later training step came between (`loss.backward(); opt.step(); loss.backward()`), GG003
      otherwise;
    - a retained part: GG001 `retained` when the same backward line re-runs it; from another
      line it is a deliberate second backward (a GAN generator step), nobody's;
    - nothing an earlier backward traversed, but a node a backward outside the guard freed:
      GG001 `consumed-outside`, unless `inputs=` limits what PyTorch runs.
    """
    if f.kind == "none":
        return ("GG001", "consumed-outside") if f.consumed_outside and not f.has_inputs else (None, None)
    same_round = f.steps_known and f.one_round
    later_round = f.steps_known and not f.one_round
    # is_carried(): a value kept from an earlier iteration counts only once an optimizer has
    # stepped, and not when the steps since were one training step's other optimizers
    if f.carried or f.rerun or (f.kept and f.stepped and not same_round):
        return "GG004", f.kind
    if f.kind == "freed":
        if f.holds_earlier_loss and not f.built_together:
            return "GG001", "loss-carried"
        if f.same_call_line:
            return ("GG003", "second-backward") if f.built_together or same_round else ("GG001", "freed")
        earlier_iteration = not f.built_together and later_round
        return ("GG001", "freed") if earlier_iteration else ("GG003", "second-backward")
    return ("GG001", "retained") if f.same_call_line else (None, None)


def gather(call: BackwardCall, a: StaleAnalysis, ev: "Evidence") -> tuple[StaleFacts, int | None]:
    """The facts `decide` needs for this backward, from capture data only, with the walk index of
    the earlier loss this graph holds (carried_loss). Facts that cannot change the decision are
    not computed (left False): the step questions when nothing is stale, the loss question when
    the part is not freed."""
    if a.kind == "none":
        return StaleFacts("none", consumed_outside=getattr(call.scan, "unmarked_freed", None) is not None,
                          has_inputs=bool(call.inputs)), None
    steps = StepLog.steps_since_mark(a, ev)
    one_round = steps is not None and StepLog.one_round(steps, call.scan, ev)
    facts = StaleFacts(a.kind, a.carried, a.kept, a.rerun, ev.optimizer_steps() > 0,
                       steps is not None, one_round, a.same_call_line, a.built_together)
    if decide(facts)[0] == "GG004" or a.kind != "freed" or a.built_together:
        return facts, None  # the loss question cannot change the verdict: not walked
    at = carried_loss(call, a, ev)
    return dataclasses.replace(facts, holds_earlier_loss=at is not None), at


def classify(call: BackwardCall, ev: "Evidence") -> tuple[StaleAnalysis, StaleVerdict]:
    """The stale analysis of this backward and the family's verdict on it, computed once per
    event for GG001, GG003 and GG004 (kept on the shared analysis)."""
    a = ev.shared(analyze, call)
    if a.verdict is None:
        facts, at = gather(call, a, ev)
        code, message = decide(facts)
        a.verdict = NOBODY if code is None else StaleVerdict(
            code, message, at if message == "loss-carried" else None)
    return a, a.verdict


def site_key(site: Any) -> tuple | None:
    return tuple((f.file, f.line) for f in site) if site else None


def analyze(call: BackwardCall) -> StaleAnalysis:
    """Rules ask for it through `ctx.shared(analyze, call)`: one analysis per call for all of them."""
    scan: GraphScan = call.scan
    marks = scan.marks
    it = call.iteration
    # Leaves (AccumulateGrad) are reached by every backward on purpose: never "stale". The scan
    # lists them and the other marked nodes (usually none: then this costs nothing per node).
    leafy = scan.leaf_index
    marked = scan.marked_index
    freed_members = {i for i in marked if not marks[i].retained}
    out = StaleAnalysis("none")
    if freed_members:
        # One freed node is enough to predict the crash; stop there (each check costs ~15 us).
        for i in sorted(freed_members):
            if scan.freed(i):
                out = StaleAnalysis("freed", freed_members, freed=[i])
                break
    if out.kind == "none":
        old = {i for i in marked if marks[i].retained and marks[i].iteration < it}
        if old:
            out = StaleAnalysis("retained", old)
    if out.kind != "none":
        start = out.freed[0] if out.freed else min(out.members)
        par = scan.walk.parent
        stamps = scan.stamps
        j = start
        while par[j] >= 0 and par[j] in out.members:
            j = par[j]
        out.marked_boundary = j
        out.mark = marks[j]
        consumed_by = out.mark.backward if out.mark else -1

        def old(i: int) -> bool:
            # made before that earlier backward ran: a carried value no backward reached itself
            # yet (an RNN's returned hidden state) is as old as the part it hangs on to
            st = stamps[i]
            return st is not None and st.epoch <= consumed_by and i not in leafy

        k = j
        while par[k] >= 0 and old(par[k]):
            k = par[k]
        # climbing to the root means the whole graph predates that backward (two losses built
        # together): the traversed part itself is the shared one
        out.built_together = par[k] < 0 and k != j and old(k)
        out.boundary = j if out.built_together else k
        if out.mark and out.mark.site and call.site:
            out.same_call_line = out.mark.site[0][:2] == call.site[0][:2]
        out.carried = _carried(scan, out)
        out.kept = _kept_for_next(scan, out, it)
        if not out.carried and not out.kept:
            out.rerun = _rerun(scan, out, consumed_by)
    return out


def _kept_for_next(scan: GraphScan, a: StaleAnalysis, iteration: int) -> bool:
    """True when the old part joins this graph through nodes made in an earlier iteration that no
    backward ran through: a value computed from last iteration's graph and kept for this one (a
    running scale, a saved output), not a tensor built once and used by every loss."""
    if a.boundary == a.marked_boundary or a.boundary < 0:
        return False
    root = scan.stamps[0] if len(scan.stamps) else None
    if root is not None and root.iteration < iteration:
        # the loss itself was built before the last step (two losses of one batch, another
        # optimizer stepping between their backwards): nothing was computed since to carry into
        return False
    st = scan.stamps[a.boundary]
    return st is not None and st.iteration < iteration and scan.marks[a.boundary] is None


MAX_RERUN_SITES = 4096  # stale members whose creation lines are compared with the fresh part's


def _rerun(scan: GraphScan, a: StaleAnalysis, consumed_by: int) -> bool:
    """True when the old part was freed by the earlier backward and joins this graph through a
    value made with it that this backward's predecessor did not run (a state stored for the next
    call: `self.hidden = (h.unsqueeze(0),)`), and the fresh part of this graph, built since that
    backward, was made by the lines that made the freed part: the same forward ran again and was
    fed the state. Judged by backward calls (epochs), not iterations: before an optimizer's first
    step every freeing backward closes an iteration, and truncated BPTT runs one backward per chunk
    between two steps. Two losses of one step (GG003) share a part, but their fresh parts are
    other lines (another head, another loss term). Freed parts only: running them raises anyway,
    so this chooses what to call the crash and never adds an alarm to a program that runs."""
    if a.kind != "freed" or a.boundary < 0 or a.boundary == a.marked_boundary or a.built_together:
        return False
    stamps, marks = scan.stamps, scan.marks
    root = stamps[0] if len(stamps) else None
    if root is None or root.epoch <= consumed_by or marks[a.boundary] is not None:
        return False  # the loss predates the earlier backward (two losses built together)
    old: set = set()
    for i in sorted(a.members)[:MAX_RERUN_SITES]:
        st = stamps[i]
        if st is not None and st.site:
            old.add(site_key(st.site))
    if not old:
        return False
    for i, st in enumerate(stamps):
        if st is not None and st.epoch > consumed_by and i not in a.members and st.site \
                and site_key(st.site) in old:
            return True
    return False


def _carried(scan: GraphScan, a: StaleAnalysis) -> bool:
    """True when the code path that made the stale boundary also made nodes of the fresh graph:
    the same lines run every iteration and feed last iteration's value into this one."""
    st = scan.stamps[a.boundary]
    if st is None:
        return False
    key = site_key(st.site)
    for i, s in enumerate(scan.stamps):
        if s is not None and i not in a.members and s.epoch > st.epoch and site_key(s.site) == key:
            return True
    return False


def snapshot(call: BackwardCall, a: StaleAnalysis, label: str | None, title: str,
             creation: Any = None) -> GraphSnapshot:
    # one comprehension, not a setdefault per member: a stale part can be 100,000 nodes
    roles: dict[int, list[str]] = {0: ["root", "stale"] if 0 in a.members else ["root"]}
    roles.update({i: ["stale"] for i in a.members if i != 0})
    # which stale nodes would actually raise (~15 us each): all of them in a drawable graph
    check = sorted(a.members)[:MAX_SNAPSHOT_NODES] if a.kind == "freed" else []
    for i in sorted(set(a.freed) | {i for i in check if call.scan.freed(i)}):
        roles.setdefault(i, []).append("freed")
    labels = {a.boundary: label} if label else {}
    it = call.iteration
    entry = call_node("entry", "this backward", loc_of(call.site), it)
    snap = snapshot_from_scan(call.scan, roles, labels, title, roots=call.roots, entry=entry,
                              creation=creation)
    if a.mark is not None:
        used = snap.add(call_node("consumed", "earlier backward", loc_of(a.mark.site), a.mark.iteration))
        src = snap.walk_id(a.marked_boundary)
        if src is not None:
            snap.link(src, used.id, "freed by" if a.kind == "freed" else "run by")
    return snap


def snapshot_with_roles(call: BackwardCall, roles: dict[int, list[str]], label_at: int | None,
                        label: str | None, title: str, creation: Any = None) -> GraphSnapshot:
    """The backward's graph around nodes whose roles a rule already knows (no stale analysis: a
    part re-walked within one iteration, a saved tensor stepped by the optimizer)."""
    roles = {0: ["root"], **roles} if 0 not in roles else roles
    labels = {label_at: label} if label and label_at is not None else {}
    entry = call_node("entry", "this backward", loc_of(call.site), call.iteration)
    return snapshot_from_scan(call.scan, roles, labels, title, roots=call.roots, entry=entry,
                              creation=creation)
