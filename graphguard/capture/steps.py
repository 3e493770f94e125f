"""Which optimizer ended which iteration: every step, judged or skimmed.

GG001 and GG003 tell an earlier iteration's graph from a second backward of the same training step
by the optimizer steps that came between (rules/shared/rounds.py). They used to log the steps they
were shown, and a skimmed iteration (NOTE [skimmed iterations] in engine.py) shows none: a misuse
that first appeared in light mode (`loss.backward(); opt.step(); loss.backward()` at iteration
200) found a gap in the log and was judged without it. The guard writes every step here from its
step post hook instead: a tuple append per step, no event, no rule call.
"""
from __future__ import annotations

import weakref
from typing import Any

__all__ = ["StepTrail", "MAX_STEPS"]

MAX_STEPS = 64  # steps kept (only the last few iterations are ever asked about)


class StepTrail:
    """(iteration the step ended, weak reference to its optimizer) for the last steps, oldest
    first. Iterations ended otherwise (a graph-freeing backward with no optimizer, `guard.step()`)
    leave no entry."""

    __slots__ = ("_log",)

    def __init__(self) -> None:
        self._log: list[tuple[int, Any]] = []

    def note(self, iteration: int, optimizer: Any) -> None:
        """`optimizer` stepped, ending `iteration`."""
        try:
            ref = weakref.ref(optimizer)  # (the same object each time: CPython shares a bare ref)
        except TypeError:  # an optimizer that cannot be weakly referenced: left out, a gap
            return
        log = self._log
        log.append((iteration, ref))
        if len(log) > 2 * MAX_STEPS:
            del log[:MAX_STEPS]  # trimmed in halves: one slice per 64 steps, not one per step

    def between(self, since: int, until: int) -> list[tuple[int, Any]]:
        """The steps that ended iterations `since` .. `until - 1`, each with its optimizer (None
        once that optimizer is gone), oldest first."""
        return [(it, ref()) for it, ref in self._log if since <= it < until]
