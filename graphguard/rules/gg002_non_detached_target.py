"""GG002 non-detached-target: a loss function gets a target that carries autograd history."""
from __future__ import annotations


import torch

from ..capture.graph import leaf_of, walk
from ..lookup.names import NameHit, find_names
from ..lookup.source import target_lines
from .shared.snapshot import call_node, snapshot_from_tensors
from ..events import LossCall
from ..model import Finding, Related
from .shared.cuts import leaf_label
from .base import Rule, display
from .context import RuleContext

__all__ = ["NonDetachedTarget"]


class NonDetachedTarget(Rule):
    """## What it does
    Checks every call of a loss function (`F.mse_loss`, `nn.MSELoss`, `F.cross_entropy`,
    `F.binary_cross_entropy*`, `F.kl_div`, `F.nll_loss`, ...) and fires when the target requires
    grad while the prediction does too.

    ## Why is this bad?
    A target is a constant to fit. With history, the backward also runs into the target's graph:
    it fails from the second iteration on when that graph was built once ("backward through the
    graph a second time"), wastes time and memory otherwise, and pushes the target toward the
    prediction when the target's graph reaches trained parameters (a DQN target not detached).

    ## Example
    ```python
    ref = make_reference(torch.zeros(8, requires_grad=True))
    loss = F.mse_loss(pred, ref)
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        ref = make_reference(torch.zeros(8))
    loss = F.mse_loss(pred, ref)          # or F.mse_loss(pred, ref.detach())
    ```

    Also fires when a loss's `weight=` / `pos_weight=` requires grad while the prediction does
    (a focal-loss weight computed from the predictions: PyTorch cannot differentiate it, or the
    weight is pushed to shrink the loss), and when the arguments are swapped: the prediction is
    passed as the target while the input is plain data (`criterion(x, x_hat)`; a warning for
    the symmetric losses mse / l1 / smooth_l1 / huber, where only the wording is wrong).

    When the target comes from a network that no optimizer holds (a DQN or DDPG target network),
    the finding names the network's output inside the target (`max_next_q_values`), which is what
    to detach or compute under `torch.no_grad()`; a target whose history comes from several such
    outputs (`critic_value - log_probs`) is named itself, since detaching one would leave the rest.

    ## Known problems
    When the prediction does not require grad because it was detached from a graph and the target
    does (VQ-VAE's commitment loss `F.mse_loss(quantized.detach(), z)`), the roles are swapped on
    purpose and the rule stays quiet. Hand-written losses (`-(p_teacher * log_p).sum()`) call no
    loss function and are not seen.
    """

    code = "GG002"
    slug = "non-detached-target"
    severity = "error"
    summary = "a loss function receives a target (or weight) that requires grad"
    template = ("{name} is the {role} of {func} but requires grad ({leaves}); {why}. Fix: {fix}")
    events = (LossCall,)

    _SYMMETRIC = frozenset({"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"})

    def check(self, event: LossCall, ctx: RuleContext) -> list[Finding] | None:
        t, x = event.target, event.input
        x_rg = isinstance(x, torch.Tensor) and x.requires_grad
        out = []
        if x_rg:
            for wname, w in event.weights:
                if w.requires_grad:
                    out.append(self._report(ctx, event, x, w, f"`{wname}=`",
                                            "a loss weight is a constant: computed from the "
                                            "predictions it needs .detach()"))
        if isinstance(t, torch.Tensor) and t.requires_grad:
            if x_rg:
                out.append(self._report(ctx, event, x, t, "target", "targets must be constants"))
            elif (isinstance(x, torch.Tensor) and x.grad_fn is None and ctx.recording_details()
                  and not ctx.cuts_behind(x)):
                # Swapped arguments: the input is plain data (never part of a graph, unlike the
                # VQ-VAE commitment loss's detach() of a graph tensor), the prediction is the target.
                sev = "warning" if event.func in self._SYMMETRIC else None
                out.append(self._report(ctx, event, x, t, "target",
                                        "the prediction is passed as the target and plain data as "
                                        "the input: the arguments are swapped", swapped=True,
                                        severity=sev))
        return out or None

    def _report(self, ctx: RuleContext, event: LossCall, x: object, t: torch.Tensor, role: str,
                why: str, swapped: bool = False, severity: str | None = None) -> Finding:
        leaves = [t] if t.grad_fn is None else [v for v in (leaf_of(n) for n in walk([t.grad_fn], 2000).nodes) if v is not None]
        subject = ctx.subject(t)
        source = None if swapped else _source(t)
        related = []
        if source is not None and leaves and _other_network(x, leaves) and _carries_all(source.value, leaves):
            # a target network, not the prediction's: its output inside the target is to detach
            subject = ctx.subject(source.value, hit=source)
            made = subject.created_at
            if made is not None and source.name:
                # `q_next = net(s).max(1)[0]; q_next = q_next * mask`: the first assignment too
                for loc in target_lines(made.file, made.line, source.name)[-3:-1]:
                    related.append(Related("assigned-at", source.name, None, loc))
        name = subject.name
        labels = []
        for leaf in leaves[:4]:
            label = leaf_label(ctx, leaf)
            made = ctx.creation(leaf)
            related.append(Related("from-leaf", label, None, ctx.loc(made[0]) if made else None))
            labels.append(label or (f"a requires-grad tensor made at line {made[0][0].line}" if made and made[0] else "a requires-grad leaf"))
        if source is not None and source.name != name:
            made = ctx.creation(source.value)
            related.append(Related("from", source.name, None, ctx.loc(made[0]) if made else None))
        if swapped:
            fix = (f"swap the arguments: {event.func}(prediction, target), with {name or 'the prediction'} first"
                   if name else f"swap the arguments: {event.func}(prediction, target)")
        else:
            fix = (f"pass {name}.detach(), or build {name} under torch.no_grad()" if name
                   else f"pass the {role.strip('`=')}.detach(), or build it under torch.no_grad()")
        # a swap is made at the loss call; a detach where the target is made
        related += ctx.fix_at(ctx.loc(event.site) if swapped else (subject.created_at or ctx.loc(event.site)),
                              name, "swap" if swapped else "detach")
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"func": event.func, "role": role,
                             "leaves": "from " + ", ".join(labels) if labels else "it has history",
                             "why": why, "fix": fix, "name": display(name, "The target")}, related,
                            severity=severity,
                            graph=snapshot_from_tensors(
                                [x, t] if isinstance(x, torch.Tensor) else [t], ctx.stamp_key,
                                highlight={1 if isinstance(x, torch.Tensor) else 0: ["target"]},
                                labels={1 if isinstance(x, torch.Tensor) else 0: name} if name else None,
                                creation=ctx.creation,
                                entry=call_node("entry", f"{event.func}()", ctx.loc(event.site), ctx.iteration),
                                title=f"GG002: {name or 'the ' + role} requires grad"))


def _other_network(x: object, leaves: list[torch.Tensor]) -> bool:
    """Whether the target's requires-grad leaves are none of the prediction's (a separate target
    network), rather than the prediction's own parameters."""
    if not isinstance(x, torch.Tensor) or x.grad_fn is None:
        return True
    mine = {id(v) for v in (leaf_of(n) for n in walk([x.grad_fn], 2000).nodes) if v is not None}
    return not any(id(v) in mine for v in leaves)


def _carries_all(source: object, leaves: list[torch.Tensor]) -> bool:
    """Whether every requires-grad leaf behind the target is behind `source` too: detaching the
    source then detaches the target. A target mixing two networks' outputs (SAC's
    `critic_value - log_probs`) is named itself, since detaching one term leaves the other."""
    if not isinstance(source, torch.Tensor) or source.grad_fn is None:
        return False
    mine = {id(v) for v in (leaf_of(n) for n in walk([source.grad_fn], 2000).nodes) if v is not None}
    return all(id(v) in mine for v in leaves)


def _source(t: torch.Tensor) -> NameHit | None:
    """The user's named tensor nearest to `t` inside `t`'s history (its breadth-first first), or None."""
    if t.grad_fn is None:
        return None
    w = walk([t.grad_fn], 2000)
    order = {id(n): i for i, n in enumerate(w.nodes)}
    root = id(w.nodes[0]) if w.nodes else None

    def match(v: object) -> bool:
        if not isinstance(v, torch.Tensor) or v is t:
            return False
        gf = v.grad_fn
        return gf is not None and id(gf) in order and id(gf) != root

    hits = find_names(match)
    if not hits:
        return None
    return min(hits, key=lambda h: order.get(id(h.value.grad_fn), 1 << 30))
