"""GG013 zero-gradient: optimized parameters whose gradient is identically zero at every step,
because their only path to the loss goes through a piecewise-constant op (round, floor, sign)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from ..capture.graph import leaf_of, walk
from ..capture.weakmap import WeakIdMap
from ..events import BackwardCall, StepCall, StepDone
from ..lookup.names import resolve
from ..lookup.origins import origin_of
from ..model import Finding, Related
from .base import Rule, display
from .context import RuleContext

__all__ = ["ZeroGradient"]

# Autograd nodes whose derivative is zero almost everywhere: a gradient through them is all zeros.
ZERO_DERIVATIVE = {"RoundBackward0": "round", "RoundBackward1": "round", "FloorBackward0": "floor",
                   "CeilBackward0": "ceil", "TruncBackward0": "trunc", "SignBackward0": "sign",
                   "SgnBackward0": "sgn"}
BELOW_WALK = 4000  # nodes walked below a zero-derivative op to find the parameters behind it
ZERO_STEPS = 2  # steps with an all-zero gradient before a parameter is reported


class ZeroGradient(Rule):
    """## What it does
    At `optimizer.step()`, finds optimized parameters whose `.grad` exists but is all zeros, at
    every step so far (at least two), when the backward graph passed from them through an op whose
    derivative is zero almost everywhere: `round`, `floor`, `ceil`, `trunc`, `sign`. It names the
    parameter and the op and its line.

    ## Why is this bad?
    Nothing crashes and `.grad` is not `None`, so the usual checks pass; but the gradient of a step
    function is zero, so the optimizer never moves the parameter (quantization or binarization
    without a straight-through estimator).

    ## Example
    ```python
    def forward(self, x):
        return torch.round(self.fc(x) * 100) / 100    # d round / dx = 0: fc never learns
    ```

    ## Use instead
    ```python
    y = self.fc(x) * 100
    return (y + (torch.round(y) - y).detach()) / 100  # straight-through estimator
    ```

    ## Known problems
    Only parameters behind one of the ops above are judged (a gradient that is zero for other
    reasons, a dead ReLU layer, is left alone). Judged while the guard records in full (the first
    iterations). Weight decay in the optimizer still moves such a parameter, toward zero.
    """

    code = "GG013"
    slug = "zero-gradient"
    severity = "error"
    summary = "an optimized parameter's gradient is all zeros every step: it only reaches the loss through round/floor/sign"
    template = ("{name} gets an all-zero gradient at every step: its only path to the loss goes "
                "through {op} at line {line}, whose derivative is zero. Fix: {fix}")
    events = (BackwardCall, StepCall, StepDone)

    def __init__(self) -> None:
        self.behind: WeakIdMap[tuple] = WeakIdMap()  # param -> (op, site, iteration) of a zero op
        self.zero_steps: WeakIdMap[int] = WeakIdMap()
        self.moved: WeakIdMap[bool] = WeakIdMap()  # param -> had a non-zero gradient once
        self.reported: WeakIdMap[bool] = WeakIdMap()
        self.closure_opt: Any = None

    def check(self, event: Any, ctx: RuleContext) -> list[Finding] | None:
        if isinstance(event, BackwardCall):
            if ctx.recording_details():
                self._scan(event, ctx)
            return None
        if isinstance(event, StepCall) and event.closure:
            self.closure_opt = event.optimizer
            return None
        if isinstance(event, StepDone):
            if event.optimizer is None or event.optimizer is not self.closure_opt:
                return None
            self.closure_opt = None
        if not len(self.behind):
            return None
        return self._judge(event, ctx)

    def _scan(self, event: BackwardCall, ctx: RuleContext) -> None:
        zero_nodes = [n for n in event.scan.nodes if type(n).__name__ in ZERO_DERIVATIVE]
        for n in zero_nodes[:16]:
            st = ctx.stamp(n)
            info = (ZERO_DERIVATIVE[type(n).__name__], st.site if st else None,
                    st.iteration if st else None)
            w = walk([n], BELOW_WALK)
            for m in w.nodes:
                leaf = leaf_of(m)
                if leaf is not None and leaf not in self.behind:
                    self.behind[leaf] = info

    def _judge(self, event: Any, ctx: RuleContext) -> list[Finding]:
        zero = []
        for group in event.optimizer.param_groups:
            for p in group["params"]:
                if not isinstance(p, torch.Tensor) or p not in self.behind or p in self.moved:
                    continue
                g = p.grad
                if g is None:
                    continue
                if bool(g.any()):
                    self.moved[p] = True
                    continue
                n = self.zero_steps.get(p, 0) + 1
                self.zero_steps[p] = n
                if n >= ZERO_STEPS and p not in self.reported:
                    zero.append(p)
        if not zero:
            return []
        for p in zero:
            self.reported[p] = True
        out = []
        for label, members, module in _group(ctx, zero)[:4]:
            p = members[0]
            op, site, it = self.behind.get(p)
            subject = ctx.subject(p, kind="parameter")
            if label is not None:
                subject = replace(subject, name=label, kind="module",
                                  created_at=origin_of(module) or subject.created_at)
            if subject.created_at is None:
                subject = replace(subject, created_at=origin_of(p))
            line = site[0].line if site else "?"
            fix = (f"use a straight-through estimator at line {line}: `x + (x.{op}() - x).detach()` "
                   f"instead of `x.{op}()`, or a smooth surrogate (tanh, sigmoid) while training")
            related = [Related("fix-at", None, op, ctx.loc(site), it)] if site else []
            out.append(self.finding(ctx, subject, ctx.loc(event.site), fix,
                                    {"op": f"`{op}`", "line": line, "fix": fix,
                                     "name": display(subject.name, "A parameter")}, related))
        return out


def _group(ctx: RuleContext, params: list[torch.Tensor]) -> list[tuple[str | None, list, Any]]:
    """A module when all its parameters are zero (`model.fc2`), else the parameters one by one."""
    zero_ids = {id(p) for p in params}
    out: list[tuple[str | None, list, Any]] = []
    done: set[int] = set()
    for p in params:
        if id(p) in done:
            continue
        hit = ctx.name_of(p)
        name = hit.name if hit else None
        if name and "." in name:
            prefix = name.rsplit(".", 1)[0]
            mhit = resolve(prefix)
            mod = mhit.value if mhit is not None else None
            if isinstance(mod, torch.nn.Module):
                ps = list(mod.parameters())
                if len(ps) > 1 and all(id(q) in zero_ids for q in ps):
                    done.update(id(q) for q in ps)
                    out.append((prefix, ps, mod))
                    continue
        done.add(id(p))
        out.append((None, [p], None))
    return out

