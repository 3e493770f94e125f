"""Per-iteration growth series for the graph-growth findings (GG004, GG101, GG102).

A finding of these rules carries `details["growth"]`: plain lists of ints, one point per
iteration in which the rule measured the graph anyway (a backward's scan, a look at a holder),
never one per op. The reports draw it as a small line plot (report/growth.py).

The dict is *live*: the rule keeps adding points to the finding it already reported (a repeat at
the same place is de-duplicated by the engine, so the first finding is the one reports show), and
the series keeps at most `LIMIT` points, the newest.
"""
from __future__ import annotations

from typing import Any, Iterable

__all__ = ["Growth", "LIMIT"]

LIMIT = 64  # points kept per series (the newest)


class Growth:
    """A bounded series of (iteration, graph nodes[, bytes]) measurements, as report data."""

    def __init__(self, unit: str = "nodes") -> None:
        self.data: dict[str, Any] = {"unit": unit, "iterations": [], "nodes": []}

    @property
    def details(self) -> dict[str, Any]:
        """The dict to put in `Finding.details["growth"]` (the same object keeps growing)."""
        return self.data

    @property
    def stopped(self) -> bool:
        return bool(self.data.get("truncated"))

    def add(self, iteration: int, nodes: int, nbytes: int | None = None,
            truncated: bool = False) -> None:
        """One measurement at the end of (or during) `iteration`. A second one in the same
        iteration replaces the first when larger (two backward calls through the same graph).
        A walk cut at its node limit ends the series: later counts would be the limit, a flat
        line that is not the graph's."""
        if self.stopped:
            return
        d = self.data
        its, ns = d["iterations"], d["nodes"]
        if its and iteration <= its[-1]:
            if iteration < its[-1] or nodes <= ns[-1]:
                return
            its.pop(), ns.pop()
            if "bytes" in d:
                d["bytes"].pop()
        its.append(int(iteration))
        ns.append(int(nodes))
        if nbytes is not None:
            d.setdefault("bytes", [None] * (len(its) - 1)).append(int(nbytes))
        elif "bytes" in d:
            d["bytes"].append(None)
        if truncated:
            d["truncated"] = True
        if len(its) > LIMIT:
            del its[:-LIMIT], ns[:-LIMIT]
            if "bytes" in d:
                del d["bytes"][:-LIMIT]

    def add_ages(self, ages: Iterable[int], last: int) -> None:
        """The first points, from the nodes alive now by the iteration that made each: what was
        kept at the end of iteration k is (for a graph that only grows) the nodes made in
        iterations <= k. `last` is the iteration the newest nodes belong to."""
        hist: dict[int, int] = {}
        for a in ages:
            if a is not None and 0 <= a <= last:
                hist[a] = hist.get(a, 0) + 1
        total = 0
        for it in sorted(hist):  # add() keeps the newest LIMIT
            total += hist[it]
            self.add(it, total)
