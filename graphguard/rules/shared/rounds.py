"""Which optimizer stepped in which iteration (shared by GG001 and GG003): a training step with
several optimizers (peers of mutual learning, a GAN's D and G, actor and critic) ends one guard
iteration per optimizer, so two backwards of one batch can be an iteration apart."""
from __future__ import annotations

import weakref
from typing import Any

from ...events import StepCall
from .stale import StaleAnalysis

__all__ = ["StepLog"]

MAX_LOGGED = 64  # steps kept (only the last few iterations are ever asked about)


class StepLog:
    """The judged steps: (iteration the step ends, a weak reference to its optimizer). Skimmed
    steps are not seen; a question about iterations with a step missing gets no answer (False)."""

    def __init__(self) -> None:
        self._log: list[tuple[int, Any]] = []

    def note(self, event: StepCall, iteration: int) -> None:
        try:
            ref = weakref.ref(event.optimizer)
        except TypeError:  # an optimizer that cannot be weakly referenced: not followed
            return
        self._log.append((iteration, ref))
        if len(self._log) > MAX_LOGGED:
            del self._log[0]

    def earlier_iteration_graph(self, a: StaleAnalysis, scan: Any, iteration: int,
                                is_optimized: Any) -> bool:
        """The hand-off between GG003 and GG001, in one place so the two rules agree: a freed part,
        not built together with this loss, consumed by a backward of an earlier training step
        (`later_round`) is a stale graph (GG001), not a second backward of one iteration (GG003)."""
        return (a.kind == "freed" and not a.built_together
                and self.later_round(a, scan, iteration, is_optimized))

    def later_round(self, a: StaleAnalysis, scan: Any, iteration: int, is_optimized: Any) -> bool:
        """Whether the earlier backward that freed this graph's shared part ran in an earlier
        training step: every iteration since it was ended by a judged optimizer step (not by a
        graph-freeing backward before any step, not skimmed), and those steps were not one
        training step's several optimizers (`same_round`). `loss.backward(); opt.step();
        loss.backward()` on one graph: the second backward runs a graph of the iteration before.
        False when the log cannot tell (a step it did not see): the judgement made without it."""
        if a.mark is None or a.mark.iteration >= iteration:
            return False
        since = a.mark.iteration
        its = [it for it, _ in self._log if since <= it < iteration]
        if len(its) != iteration - since or len(set(its)) != len(its):
            return False
        return not self.same_round(a, scan, iteration, is_optimized)

    def same_round(self, a: StaleAnalysis, scan: Any, iteration: int, is_optimized: Any) -> bool:
        """Whether the earlier backward that freed this graph's shared part ran in the same
        training step as this one: every iteration since it was ended by a different optimizer,
        and none of those optimizers holds some optimized parameter this graph reaches (its own
        optimizer has not stepped yet: `for i, model in enumerate(models): loss_i.backward();
        optimizers[i].step()` over outputs all computed before the loop)."""
        if a.mark is None or a.mark.iteration >= iteration:
            return False
        since = a.mark.iteration
        steps = [(it, ref()) for it, ref in self._log if since <= it < iteration]
        if len(steps) != iteration - since or len({it for it, _ in steps}) != len(steps):
            return False  # a step this log did not see (a skimmed iteration), or a doubled one
        opts = [o for _, o in steps]
        if any(o is None for o in opts) or len({id(o) for o in opts}) != len(opts):
            return False  # an optimizer stepped twice: a later training step
        stepped = {id(p) for o in opts for g in o.param_groups for p in g["params"]}
        for i in scan.leaf_index:
            p = getattr(scan.nodes[i], "variable", None)
            if p is not None and id(p) not in stepped and is_optimized(p):
                return True
        return False
