"""GG019 ranks-diverged: the ranks of a process group stopped making the same collective calls."""
from __future__ import annotations

import linecache
from typing import Iterator

from ..capture.ranks import RankCall, RankState
from ..events import RanksStalled
from ..model import Finding, Message, Related, Role, SourceLoc, Subject
from .base import Detection, Rule
from .context import Evidence, RuleContext

__all__ = ["RanksDiverged"]


class RanksDiverged(Rule):
    """## What it does
    In a process group of two or more ranks, watches every rank's collective calls (the
    all-reduce of a DistributedDataParallel backward, DDP's buffer broadcast, `dist.barrier()`,
    `dist.all_reduce()` and the rest). When one rank has waited in a call past the hang timeout
    (60 s unless set: `GraphGuard(hang_timeout=...)`, `graphguard run --hang-timeout`,
    `GRAPHGUARD_HANG_TIMEOUT`) and every rank's account shows that none can go on (each waits in a
    collective or has finished, not all in the same one), it reports where each rank waits, its
    last backward and step, and the first call where their sequences part. The process then ends
    with exit status 1 instead of hanging.

    ## Why is this bad?
    A collective returns only when every rank makes it. A rank that skips a backward (a NaN check
    on its own loss, one batch more in its shard, `if rank == 0:` around a DDP forward) leaves the
    others waiting in their all-reduce, with nothing printed, until the process group's timeout
    (30 minutes by default) or for ever.

    ## Example
    ```python
    loss = model(x).mean()                 # model = DDP(net)
    if not torch.isfinite(loss):           # true on one rank only
        continue                           # the other ranks wait in backward for ever
    loss.backward()
    ```

    ## Use instead
    ```python
    bad = torch.tensor(float(not torch.isfinite(loss)))
    dist.all_reduce(bad)                   # every rank decides together
    if bad:
        continue
    ```
    Give every rank the same number of batches (`DistributedSampler(..., drop_last=True)`), or
    wrap uneven loops in `model.join()`.

    ## Known problems
    Only the guarded thread's calls are counted, and only calls made through `torch.distributed`'s
    module functions and DDP. Subgroups are not told apart from the default group. A rank that
    computes for longer than half the timeout while the others wait is not a deadlock and is never
    reported.
    """

    code = "GG019"
    slug = "ranks-diverged"
    severity = "error"
    summary = "the ranks stopped making the same collective calls: each waits for the others for ever"
    messages = (
        Message("deadlock", "error",
                "rank {rank} has waited {waited} s in {call}; {others}; the ranks' collective calls "
                "part at their {part} call, so none of them can go on and the run would hang; {fix}",
                "every rank waits in a collective call or has finished, not all in the same one: "
                "none can go on"),
    )
    events = (RanksStalled,)

    def detect(self, event: RanksStalled, ev: Evidence) -> Iterator[Detection]:
        # capture/ranks.py raised the event only once every rank's account showed none can go on:
        # the decision is made there, from the ranks' recorded calls
        me: RankState = event.me
        if me.current is None:
            return
        yield Detection("deadlock", me, {"part": _parting(event.ranks)})

    def describe(self, d: Detection, event: RanksStalled, ctx: RuleContext) -> Finding:
        me: RankState = d.subject
        others = [s for s in event.ranks if s.rank != me.rank]
        related: list[Related] = []
        for s in [me] + others:
            who = f"rank {s.rank}"
            if s.current is not None and s is not me:
                related.append(Related(Role.WAITS_AT, who, s.current.kind, _loc(s.current)))
            if s.last_backward is not None:
                related.append(Related(Role.LAST_BACKWARD, who, "backward", _loc(s.last_backward)))
            if s.last_step is not None:
                related.append(Related(Role.LAST_STEP, who, "step", _loc(s.last_step)))
        part = d.facts["part"]
        if part is not None:
            for s, call in part[1]:
                related.append(Related(Role.DIVERGES_AT, f"rank {s.rank}", call.kind if call else "nothing",
                                       _loc(call) if call else None))
        fix = ("make every rank take the same collective calls in the same order: decide skips and "
               "early exits together (all-reduce a flag first), give every rank the same number of "
               "batches (DistributedSampler(drop_last=True), or DDP's join())")
        subject = Subject(None, "call", f"rank {me.rank} of {me.world_size}: {_call(me.current)}",
                          _loc(me.current))
        args = {"rank": me.rank, "waited": f"{event.waited:.0f}",
                "call": f"its {_nth(me.current.index + 1)} collective call, {_call(me.current)}",
                "others": "; ".join(_doing(s) for s in others),
                "part": _nth(part[0] + 1) if part is not None else "last",
                "fix": fix}
        loc = ctx.loc(event.site) or _loc(me.current)
        return self.finding(ctx, subject, loc, fix, args, related, message="deadlock")


def _parting(states: list[RankState]) -> tuple[int, list[tuple[RankState, RankCall | None]]] | None:
    """The first position at which the ranks' collective calls differ (by kind and line), with
    each rank's call there (None: it never made one). None when the histories kept cannot tell."""
    by_rank = [{c.index: c for c in s.history} for s in states]
    start = max((min(h) for h in by_rank if h), default=0)
    end = max((s.calls for s in states), default=0)
    for i in range(start, end):
        calls = [h.get(i) for h in by_rank]
        keys = {(c.kind, c.file, c.line) if c else None for c in calls}
        if len(keys) > 1:
            return i, list(zip(states, calls))
    return None


def _doing(s: RankState) -> str:
    counts = f"after {s.backwards} backward(s) and {s.steps} step(s)"
    if s.last_backward is not None:
        counts += f", its last backward at line {s.last_backward.line}"
    if s.finished:
        return f"rank {s.rank} has finished ({counts})"
    if s.current is None:
        return f"rank {s.rank} makes no collective call ({counts})"
    return f"rank {s.rank} waits in its {_nth(s.current.index + 1)} call, {_call(s.current)} ({counts})"


def _call(c: RankCall | None) -> str:
    if c is None:
        return "no call"
    if c.kind == "backward":
        return f"the all-reduce of the backward at line {c.line}"
    if c.kind == "forward":
        return f"DDP's buffer broadcast before the forward at line {c.line}"
    return f"`{c.kind}()` at line {c.line}"


def _loc(c: RankCall | None) -> SourceLoc | None:
    """Where a rank made a call, with its source line: describe only (the line is wording)."""
    if c is None or not c.file:
        return None
    return SourceLoc(c.file, c.line, c.function, linecache.getline(c.file, c.line).strip())


def _nth(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
