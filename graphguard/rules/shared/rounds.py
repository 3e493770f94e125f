"""Which optimizer stepped in which iteration (shared by GG001 and GG003): a training step with
several optimizers (peers of mutual learning, a GAN's D and G, actor and critic) ends one guard
iteration per optimizer, so two backwards of one batch can be an iteration apart. The steps are
the guard's trail of every step, skimmed ones too (capture/steps.py, `Evidence.steps_between`),
so a misuse that first appears in light mode is judged as it is while recording."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # stale.py's classifier asks StepLog: imported for the annotations only
    from ..context import Evidence
    from .stale import StaleAnalysis

__all__ = ["StepLog", "rounds_spanned"]


class StepLog:
    """The questions GG001 and GG003 ask of the steps between two backwards, answered the same
    way for both (they agree by construction). Holds nothing: the steps are the context's."""

    def earlier_iteration_graph(self, a: StaleAnalysis, scan: Any, ctx: "Evidence") -> bool:
        """The hand-off between GG003 and GG001, in one place so the two rules agree: a freed part,
        not built together with this loss, consumed by a backward of an earlier training step
        (`later_round`) is a stale graph (GG001), not a second backward of one iteration (GG003)."""
        return (a.kind == "freed" and not a.built_together
                and self.later_round(a, scan, ctx))

    def later_round(self, a: StaleAnalysis, scan: Any, ctx: "Evidence") -> bool:
        """Whether the earlier backward that freed this graph's shared part ran in an earlier
        training step: every iteration since it was ended by an optimizer step (not by a
        graph-freeing backward before any step, not by `guard.step()`), and those steps were not
        one training step's several optimizers (`same_round`). `loss.backward(); opt.step();
        loss.backward()` on one graph: the second backward runs a graph of the iteration before.
        False when the steps cannot tell (an iteration ended otherwise)."""
        steps = self.steps_since_mark(a, ctx)
        return steps is not None and not self.one_round(steps, scan, ctx)

    def same_round(self, a: StaleAnalysis, scan: Any, ctx: "Evidence") -> bool:
        """Whether the earlier backward that freed this graph's shared part ran in the same
        training step as this one: every iteration since it was ended by a different optimizer,
        and none of those optimizers holds some optimized parameter this graph reaches (its own
        optimizer has not stepped yet: `for i, model in enumerate(models): loss_i.backward();
        optimizers[i].step()` over outputs all computed before the loop)."""
        steps = self.steps_since_mark(a, ctx)
        return steps is not None and self.one_round(steps, scan, ctx)

    @staticmethod
    def steps_since_mark(a: StaleAnalysis, ctx: "Evidence") -> list[tuple[int, Any]] | None:
        """One step for each iteration since the freeing backward's, or None (an iteration ended
        by something else, or no earlier iteration at all)."""
        iteration = ctx.iteration
        if a.mark is None or a.mark.iteration >= iteration:
            return None
        since = a.mark.iteration
        steps = ctx.steps_between(since, iteration)
        if len(steps) != iteration - since or len({it for it, _ in steps}) != len(steps):
            return None
        return steps

    @staticmethod
    def one_round(steps: list[tuple[int, Any]], scan: Any, ctx: "Evidence") -> bool:
        """Whether `steps` (steps_since_mark) are one training step's several optimizers: each
        stepped once, and one of the optimized parameters this graph reaches is held by none of
        them (its own optimizer has yet to step)."""
        opts = [o for _, o in steps]
        if any(o is None for o in opts) or len({id(o) for o in opts}) != len(opts):
            return False  # an optimizer stepped twice: a later training step
        stepped = {id(p) for o in opts for g in o.param_groups for p in g["params"]}
        for i in scan.leaf_index:
            p = getattr(scan.nodes[i], "variable", None)
            if p is not None and id(p) not in stepped and ctx.is_optimized(p):
                return True
        return False


def rounds_spanned(ages: set[int], ctx: "Evidence") -> int:
    """How many training steps the guard iterations `ages` fall in. A training step with several
    optimizers ends one guard iteration per optimizer (CycleGAN's G, D_A and D_B), so one step's
    values (`loss_D_A + loss_D_B`, summed after the last step) span several iterations without
    piling anything up. Iterations are grouped in order: a new training step begins at an
    iteration ended by an optimizer that already stepped in the current one. An iteration with no
    step on the trail (ended by a backward, still under way, or its optimizer gone) is a step of
    its own, so programs with one optimizer count as before."""
    if len(ages) < 2:
        return len(ages)
    lo, hi = min(ages), max(ages)
    ended = {it: o for it, o in ctx.steps_between(lo, hi + 1)}
    rounds, current = 0, None  # current: ids of the optimizers that stepped in this round
    out: set[int] = set()
    for it in range(lo, hi + 1):
        o = ended.get(it)
        if o is None or current is None or id(o) in current:
            rounds += 1
            current = set()
        if o is not None:
            current.add(id(o))
        else:
            current = None  # nothing to group the next iteration with
        if it in ages:
            out.add(rounds)
    return len(out)
