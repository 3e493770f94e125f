"""GG013 zero-gradient: optimized parameters whose gradient is identically zero at every step,
because their only path to the loss goes through a piecewise-constant op (round, floor, sign)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from ..capture.graph import leaf_of, registering_modules, walk
from ..capture.weakmap import WeakIdMap
from ..events import BackwardCall, StepCall, StepDone
from ..lookup.names import resolve
from ..lookup.origins import origin_of
from ..lookup.assigned import assigned_target
from ..model import Finding, Message, Related, Role, SourceLoc, Subject
from .shared.steps import ClosureDeferral
from .base import Detection, Rule, display
from .shared.deadgraph import GraphIndex, chain, downward, index_graph, upward
from .context import Evidence, RuleContext

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

    When all of one module's parameters are stuck, the finding names the first one as written
    (`model.fc.weight`) and the module as `held-by`; when several modules are (the whole model
    behind the op), it names each module (`model.fc2`).

    As a warning, it also fires before backward when one term of a sum reaches the optimized
    parameters only through such an op while the other terms train them (`loss + (sign(pred) -
    sign(y)).pow(2).sum()`): the gradient is not zero, but that term contributes nothing to it.

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
    messages = (
        Message("zero-every-step", "error",
                "{name} gets an all-zero gradient at every step: its only path to the loss goes "
                "through {op} at line {line}, whose derivative is zero. Fix: {fix}",
                "an optimized parameter (or all of a module's) whose gradient is all zeros at every "
                "step, behind round/floor/ceil/trunc/sign"),
        Message("term-trains-nothing", "warning",
                "{name} adds a term to the loss whose only path to the optimized parameters goes "
                "through {op} at line {line}: its derivative is zero, so that term trains "
                "nothing while the other terms do. Fix: {fix}",
                "one term of a sum reaches the optimized parameters only through a zero-derivative "
                "op, while the other terms train them"),
    )
    events = (BackwardCall, StepCall, StepDone)
    # quiet: at backward it looks only while recording
    quiet_skip = (BackwardCall,)
    skim_skip = (StepCall, StepDone)  # silent misuse, judged at sampled steps

    def __init__(self) -> None:
        self.behind: WeakIdMap[tuple] = WeakIdMap()  # param -> (op, site, iteration) of a zero op
        self.zero_steps: WeakIdMap[int] = WeakIdMap()
        self.moved: WeakIdMap[bool] = WeakIdMap()  # param -> had a non-zero gradient once
        self.reported: WeakIdMap[bool] = WeakIdMap()
        self.closures = ClosureDeferral()  # step(closure): judged at its StepDone
        self.dead_reported: set[tuple[str, int]] = set()  # lines of terms reported (_dead_terms)

    # ---- detect: from the backward graph and the gradients' values ------------------------------
    def detect(self, event: Any, ev: Evidence) -> list[Detection] | None:
        if isinstance(event, BackwardCall):
            if ev.recording_details() and event.scan is not None:
                self._scan(event, ev)
                if event.api == "backward" and ev.any_optimized():
                    return self._dead_terms(event, ev)
            return None
        if self.closures.defer(event):
            return None
        if not len(self.behind):
            return None
        return self._judge(event)

    def _scan(self, event: BackwardCall, ev: Evidence) -> None:
        zero_nodes = [n for n in event.scan.nodes if type(n).__name__ in ZERO_DERIVATIVE]
        for n in zero_nodes[:16]:
            st = ev.stamp(n)
            info = (ZERO_DERIVATIVE[type(n).__name__], st.site if st else None,
                    st.iteration if st else None)
            w = walk([n], BELOW_WALK)
            for m in w.nodes:
                leaf = leaf_of(m)
                if leaf is not None and leaf not in self.behind:
                    self.behind[leaf] = info

    def _dead_terms(self, event: BackwardCall, ev: Evidence) -> list[Detection]:
        """One term of a sum whose only paths to the optimized parameters pass through a
        zero-derivative op, while the other terms train them: the parameters get a gradient (so
        the step-time check stays quiet), but none from that term (`loss + (sign(pred) - sign(y))
        .pow(2).sum()`). Judged on the graph before backward, once per line."""
        scan = event.scan
        nodes = scan.nodes
        if scan.truncated or not nodes:
            return []
        zero = {i for i, n in enumerate(nodes) if type(n).__name__ in ZERO_DERIVATIVE}
        if not zero:
            return []
        opt = [i for i in scan.leaf_index if ev.is_optimized(getattr(nodes[i], "variable", None))]
        if not opt:
            return []
        g = index_graph(nodes)
        reach = upward(g, opt)
        live = upward(g, opt, zero)  # reaches a parameter without a zero-derivative op
        if 0 not in live:
            return []  # nothing trains: the step-time check judges the parameters
        trained = downward(g, 0, zero) & set(opt)  # parameters some term trains
        out = []
        for i in sorted(live):
            if type(nodes[i]).__name__ not in _SUMS:
                continue
            for t in g.children[i]:
                if t in live or t not in reach or t in zero:
                    continue
                z = _first_zero(g, t, reach, live, zero)
                # only when the parameters behind the op learn from the other terms: a parameter
                # whose every path is cut gets an all-zero gradient, which the step-time check reports
                if z is None or not (downward(g, z) & trained):
                    continue
                d = self._dead_term(ev, nodes[i], [nodes[k] for k in chain(g, t, z)], nodes[z])
                if d is not None:
                    out.append(d)
        return out[:4]

    def _dead_term(self, ev: Evidence, total: Any, chain: list[Any], op_node: Any) -> Detection | None:
        """The term whose first node (`chain[0]`) was made at a line not reported yet."""
        st = ev.stamp(chain[0])
        if st is None or not st.site:
            return None
        key = (st.site[0].file, st.site[0].line)
        if key in self.dead_reported:
            return None
        self.dead_reported.add(key)
        return Detection("term-trains-nothing", chain[0],
                         {"total": total, "chain": chain, "op_node": op_node})

    def _judge(self, event: Any) -> list[Detection]:
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
        groups = _group(zero)
        # one stuck layer: its first parameter as written (`model.enc.weight`), the module held-by;
        # several (the whole model behind the op): each module (`model.fc1`, `model.fc2`)
        by_module = sum(1 for _, _, module in groups if module is not None) > 1
        return [Detection("zero-every-step", members[0],
                          {"first": first, "members": members, "module": module,
                           "by_module": by_module, "behind": self.behind.get(members[0]),
                           "site": event.site})
                for first, members, module in groups[:4]]

    # ---- describe: names, lines, fixes ---------------------------------------------------------
    def describe(self, d: Detection, event: Any, ctx: RuleContext) -> Finding | None:
        if d.message == "term-trains-nothing":
            return self._describe_term(d, event, ctx)
        return self._describe_stuck(d, ctx)

    def _describe_term(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        chain, total, op_node = d.facts["chain"], d.facts["total"], d.facts["op_node"]
        st, zt = ctx.stamp(chain[0]), ctx.stamp(total)
        # the term as written: the first value on its way down to the op that the user named
        # apart from the sum (`penalty = ...` added by `total = loss + 0.1 * penalty`), else the
        # sum's own target when the term is written inline (`losses = losses + torch.sum(...)`)
        sum_w = assigned_target(zt.site) if zt and zt.site else None
        w = None
        for node in chain:
            sn = ctx.stamp(node)
            cand = assigned_target(sn.site) if sn and sn.site else None
            if cand is not None and (sum_w is None or cand[0] != sum_w[0]):
                w = cand
                break
        w = w or sum_w or assigned_target(st.site)
        name, where = (w[0], SourceLoc.from_frame(w[1])) if w else (None, ctx.loc(st.site))
        zt = ctx.stamp(op_node)
        op = ZERO_DERIVATIVE[type(op_node).__name__]
        line = zt.site[0].line if zt and zt.site else "?"
        related = [Related(Role.FIX_AT, None, op, ctx.loc(zt.site), zt.iteration)] if zt and zt.site else []
        fix = (f"the term's gradient through `{op}` at line {line} is zero: use a smooth surrogate "
               f"(tanh(k * x) for sign, a sigmoid for a step) or a straight-through estimator "
               f"`x + (x.{op}() - x).detach()`")
        subject = Subject(name, "tensor", "", where, st.iteration)
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"op": f"`{op}`", "line": line, "fix": fix,
                             "name": display(name, "A term of the loss")}, related,
                            message="term-trains-nothing")

    def _describe_stuck(self, d: Detection, ctx: RuleContext) -> Finding:
        p, members, module = d.subject, d.facts["members"], d.facts["module"]
        op, site, it = d.facts["behind"]
        subject = ctx.subject(p, kind="parameter")
        held: list[Related] = []
        if module is not None:
            # all of a module's parameters are stuck: name the first one as written
            # (`model.fc.weight`), dated by the line that builds the module; the module and
            # its other parameters go in `related`
            label = _module_label(ctx, d.facts["first"], module)
            made = origin_of(module)
            if d.facts["by_module"]:
                subject = replace(subject, name=label, kind="module",
                                  created_at=made or subject.created_at)
            else:
                subject = replace(subject, created_at=made or subject.created_at)
                held = [Related(Role.HELD_BY, label, None, made)]
                for q in members[1:4]:
                    hq = ctx.name_of(q)
                    held.append(Related(Role.UNREACHABLE, hq.name if hq else None, None, None))
        if subject.created_at is None:
            subject = replace(subject, created_at=origin_of(p))
        line = site[0].line if site else "?"
        fix = (f"use a straight-through estimator at line {line}: `x + (x.{op}() - x).detach()` "
               f"instead of `x.{op}()`, or a smooth surrogate (tanh, sigmoid) while training")
        related = [Related(Role.FIX_AT, None, op, ctx.loc(site), it)] if site else []
        related += held
        return self.finding(ctx, subject, ctx.loc(d.facts["site"]), fix,
                            {"op": f"`{op}`", "line": line, "fix": fix,
                             "name": display(subject.name, "A parameter")}, related,
                            message="zero-every-step")


_SUMS = frozenset({"AddBackward0", "AddBackward1", "SubBackward0", "SubBackward1"})


def _first_zero(g: GraphIndex, start: int, reach: set[int], live: set[int],
                zero: set[int]) -> int | None:
    """The first zero-derivative node below `start` on its paths to the parameters."""
    seen, queue = {start}, [start]
    while queue:
        i = queue.pop(0)
        if i in zero:
            return i
        for c in g.children[i]:
            if c not in seen and c in reach and c not in live:
                seen.add(c)
                queue.append(c)
    return None


def _group(params: list[torch.Tensor]) -> list[tuple[torch.Tensor, list, Any]]:
    """(first stuck parameter, the parameters of one finding, their module or None): one module
    when all its parameters (more than one) are zero, else the parameters one by one. The module
    is the one that registers the parameter (capture/graph.py `registering_modules`: what refers
    to it, whatever name reaches it), asked once per finding, never per step."""
    zero_ids = {id(p) for p in params}
    owners = registering_modules(params)
    out: list[tuple[torch.Tensor, list, Any]] = []
    done: set[int] = set()
    for p in params:
        if id(p) in done:
            continue
        mod = owners.get(id(p), (None, ""))[0]
        if isinstance(mod, torch.nn.Module):
            ps = list(mod.parameters())
            if len(ps) > 1 and all(id(q) in zero_ids for q in ps):
                done.update(id(q) for q in ps)
                out.append((p, ps, mod))
                continue
        done.add(id(p))
        out.append((p, [p], None))
    return out


def _module_label(ctx: RuleContext, p: torch.Tensor, module: torch.nn.Module) -> str | None:
    """The module as the user reaches it: the prefix of the parameter's name (`model.fc2` for
    `model.fc2.weight`) when that prefix holds the module, else a name that holds the module."""
    hit = ctx.name_of(p)
    name = hit.name if hit else None
    if name and "." in name:
        prefix = name.rsplit(".", 1)[0]
        mhit = resolve(prefix)
        if mhit is not None and mhit.value is module:
            return prefix
    mhit = ctx.name_of(module)
    return mhit.name if mhit else None
