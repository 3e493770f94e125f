"""Analysis shared by GG001/GG003/GG004: which part of a backward's graph an earlier backward used."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..capture.scan import GraphScan, Mark
from ..capture.snapshot import GraphSnapshot, snapshot_from_scan
from ..events import BackwardCall

__all__ = ["StaleAnalysis", "analyze", "snapshot"]


@dataclass
class StaleAnalysis:
    """The stale part of a graph, found before backward runs."""

    kind: str  # "none" | "freed" (running it will raise) | "retained" (re-traversed, kept)
    members: set[int] = field(default_factory=set)  # walk indices of the stale nodes
    boundary: int = -1  # the stale node where the old part joins the new graph
    freed: list[int] = field(default_factory=list)  # stale nodes whose buffers are gone
    mark: Mark | None = None  # the earlier backward that traversed the boundary
    same_call_line: bool = False  # that backward was called from the line of this one
    carried: bool = False  # the line that made the stale part also made this iteration's graph


def _site_key(site: Any) -> tuple | None:
    return tuple((f.file, f.line) for f in site) if site else None


def analyze(call: BackwardCall) -> StaleAnalysis:
    """Memoized on the call, so the three rules share one analysis."""
    cached = getattr(call, "_stale", None)
    if cached is not None:
        return cached
    scan: GraphScan = call.scan
    marks = scan.marks
    freed_members = {i for i, m in enumerate(marks) if m is not None and not m.retained}
    out = StaleAnalysis("none")
    if freed_members:
        # One freed node is enough to predict the crash; stop there (each check costs ~15 us).
        for i in sorted(freed_members):
            if scan.freed(i):
                out = StaleAnalysis("freed", freed_members, freed=[i])
                break
    if out.kind == "none":
        old = {i for i, m in enumerate(marks)
               if m is not None and m.retained and m.iteration < call_iteration(call)}
        if old:
            out = StaleAnalysis("retained", old)
    if out.kind != "none":
        start = out.freed[0] if out.freed else min(out.members)
        par = scan.walk.parent
        j = start
        while par[j] >= 0 and par[j] in out.members:
            j = par[j]
        out.boundary = j
        out.mark = marks[j]
        if out.mark and out.mark.site and call.site:
            out.same_call_line = out.mark.site[0][:2] == call.site[0][:2]
        out.carried = _carried(scan, out)
    call._stale = out  # type: ignore[attr-defined]
    return out


def call_iteration(call: BackwardCall) -> int:
    return getattr(call, "iteration", 0)


def _carried(scan: GraphScan, a: StaleAnalysis) -> bool:
    """True when the code path that made the stale boundary also made nodes of the fresh graph:
    the same lines run every iteration and feed last iteration's value into this one."""
    st = scan.stamps[a.boundary]
    if st is None:
        return False
    key = _site_key(st.site)
    for i, s in enumerate(scan.stamps):
        if s is not None and i not in a.members and s.iteration > st.iteration and _site_key(s.site) == key:
            return True
    return False


def snapshot(call: BackwardCall, a: StaleAnalysis, label: str | None, title: str) -> GraphSnapshot:
    roles: dict[int, list[str]] = {0: ["root"]}
    for i in a.members:
        roles.setdefault(i, []).append("stale")
    for i in a.freed:
        roles.setdefault(i, []).append("freed")
    labels = {a.boundary: label} if label else {}
    return snapshot_from_scan(call.scan, roles, labels, title)
