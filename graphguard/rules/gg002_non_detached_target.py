"""GG002 non-detached-target: a loss function gets a target that carries autograd history."""
from __future__ import annotations

from typing import Any, Callable, Iterator

import torch

from ..capture.graph import leaf_of
from ..lookup.names import NameHit, find_names
from ..lookup.source import target_lines
from .shared.snapshot import call_node, snapshot_from_tensors
from ..events import LossCall, ProductOp
from ..model import Finding, Message, Related, Role
from .shared.cuts import leaf_label
from .shared.softtarget import prob_node, logp_node, written_target
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["NonDetachedTarget"]

# the story of a target from a network no optimizer holds: wasted work, not a wrong update
_WASTED_TEXT = ("no optimizer holds those parameters, so nothing is trained wrongly, but every "
                "backward also runs through the network that made it for gradients nobody uses")


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
    passed as the target while the input is plain data (`criterion(x, x_hat)`; info only for
    the symmetric losses mse / l1 / smooth_l1 / huber, whose value and gradient do not change
    with the order: DDPM's `F.smooth_l1_loss(noise, predicted_noise)` is correct as written).

    When the target comes from a network that no optimizer holds (a DQN or DDPG target network),
    the finding names the network's output inside the target (`max_next_q_values`), which is what
    to detach or compute under `torch.no_grad()`; a target whose history comes from several such
    outputs (`critic_value - log_probs`) is named itself, since detaching one would leave the rest.
    When *all* the leaves behind the target are module parameters that no optimizer holds while
    some optimizer trains others (a distillation teacher or a target network run with grad on),
    nothing is trained wrongly and the finding is a warning: each backward still runs through
    that network for gradients nobody uses. A target whose gradient reaches a trained parameter (the
    prediction's own network, or a network another optimizer steps) is an error, except a
    distribution (a softmax or sigmoid output) that the prediction's own network made, as the
    target of `F.kl_div`, `F.cross_entropy` or `F.binary_cross_entropy*`: R-Drop's
    `F.kl_div(F.log_softmax(out1), F.softmax(out2))` over two dropout passes of one model
    trains both sides on purpose, as the hand-written terms below do.

    Hand-written cross-entropies and KL terms count too: a product of a probability (softmax or
    sigmoid output, `exp(log_softmax(.))`) and the log-probability of another distribution
    (`log_softmax`, `logsigmoid`, `torch.log` of a softmax), seen through sign, scaling,
    clamping and shape ops (`-(F.softmax(t, 1) * F.log_softmax(s, 1)).sum(1)`, co-training's
    `S(logit_S2) * LS(perturbed_logit_S1)`). Its probability side is the soft target; it is
    reported when its gradient reaches parameters the log-probability side does not depend on
    (a teacher's, a peer network's), at the product's line, where the fix (`.detach()` of the
    target there) goes. KL divergences written with the target's own log folded in count too:
    `p * (log p - log q)` (either sign, `log_softmax` or `torch.log` of a probability on each
    side) and `p * torch.log(p / q)`; the prediction judged is then q's side alone, since the
    difference as a whole also depends on p's parameters. The same sums written as a contraction
    count when it pairs the two distributions' class dims (`torch.einsum("bc,bc->b", p, log_q)`,
    `torch.bmm(p.unsqueeze(1), log_q.unsqueeze(2))`, `p @ log_q.T`, `dot`, `inner`,
    `tensordot`), and so does `torch.xlogy(p, q)` (`torch.special.xlogy`; p * log q, and
    `xlogy(p, p / q)` a KL).

    ## Known problems
    When the prediction does not require grad because it was detached from a graph and the target
    does (VQ-VAE's commitment loss `F.mse_loss(quantized.detach(), z)`), the roles are swapped on
    purpose and the rule stays quiet. A hand-written product whose two sides come from the same
    parameters (an entropy term, R-Drop's two dropout passes, a Jensen-Shannon term over a mixture
    of both networks) trains them on purpose and is not reported; nor is a KL whose `log p` comes
    from a second forward pass of the teacher rather than from the same logits as `p` (its two
    sides are then not recognised as one distribution), nor a contraction whose class dims
    cannot be followed to the softmax (`torch.dot(p.flatten(), log_q.flatten())`, a reshape
    that merges them) or that pairs them with other dims (attention weights times
    log-probabilities, summed over the batch). A target detached as the probability but not
    inside its log (`p.detach() * (p.log() - log_q)`) still sends gradient to its network through
    the log and is not reported. Hand-written products are seen while the guard records in full (the
    first iterations).
    """

    code = "GG002"
    slug = "non-detached-target"
    severity = "error"
    summary = "a loss function receives a target (or weight) that requires grad"
    # one message per story; a target (or soft target) whose gradient only reaches parameters
    # no optimizer holds is the milder story of the same misuse (wasted work, not a wrong update)
    messages = (
        Message("target", "error",
                "{name} is the target of {func} but requires grad ({leaves}); targets must be "
                "constants. Fix: {fix}",
                "a loss function's target requires grad while the prediction does too"),
        Message("target-untrained", "warning",
                "{name} is the target of {func} but requires grad ({leaves}); " + _WASTED_TEXT
                + ". Fix: {fix}",
                "the target comes from another network that no optimizer holds (a frozen teacher, "
                "a target network run with grad on): each backward runs through it for nothing"),
        Message("soft-target", "error",
                "{name} is the soft target of {func} but requires grad ({leaves}); a soft target is "
                "a constant to fit: the gradient through it also trains the network that made it. "
                "Fix: {fix}",
                "a hand-written cross-entropy or KL whose probability side trains another network"),
        Message("soft-target-untrained", "warning",
                "{name} is the soft target of {func} but requires grad ({leaves}); " + _WASTED_TEXT
                + ". Fix: {fix}",
                "a hand-written cross-entropy or KL whose probability side comes from a network no "
                "optimizer holds"),
        Message("weight", "error",
                "{name} is the {role} of {func} but requires grad ({leaves}); a loss weight is a "
                "constant: computed from the predictions it needs .detach(). Fix: {fix}",
                "a loss's weight= / pos_weight= requires grad while the prediction does"),
        Message("swapped", "error",
                "{name} is the target of {func} but requires grad ({leaves}); the prediction is "
                "passed as the target and plain data as the input: the arguments are swapped. "
                "Fix: {fix}",
                "the prediction is passed as the target and plain data as the input"),
        Message("swapped-symmetric", "info",
                "{name} is the target of {func} but requires grad ({leaves}); the prediction is "
                "passed as the target and plain data as the input: the arguments are swapped. "
                "Fix: {fix}",
                "arguments swapped in a symmetric loss (mse / l1 / smooth_l1 / huber): same value "
                "and gradient, only the wording is swapped"),
    )
    events = (LossCall, ProductOp)

    _SYMMETRIC = frozenset({"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"})

    def detect(self, event: LossCall | ProductOp, ev: Evidence) -> Iterator[Detection]:
        if isinstance(event, ProductOp):
            # a product the recorder saw: judged as a loss call when it is a cross-entropy or
            # KL written out (NOTE [hand-written soft targets] in rules/shared/softtarget.py)
            found = written_target(event.op, event.a, event.b, event.equation, event.dims)
            if found is None:
                return
            event = LossCall(event.site, "a hand-written cross-entropy", found.prediction,
                             found.target, written=True, input_node=found.prediction_node)
        t, x = event.target, event.input
        x_rg = isinstance(x, torch.Tensor) and x.requires_grad
        out = []
        if x_rg:
            for wname, w in event.weights:
                if w.requires_grad:
                    out.append(Detection("weight", w, {"call": event, "x": x, "role": f"`{wname}=`"}))
        if event.written:
            # a product softmax(t) * log_softmax(s) the user wrote: its probability side is a
            # soft target when the gradient through it reaches parameters the prediction does
            # not depend on (a teacher's, a peer network's). A distribution and the log of one
            # made by the same parameters (an entropy term, R-Drop's two passes, a Jensen-Shannon
            # term over a mixture of both networks) trains those parameters on purpose.
            # A KL written out (`p * (log p - log q)`): the factor also holds log p, so the
            # prediction judged is q's side inside it (event.input_node), not the whole factor.
            if not (x_rg and isinstance(t, torch.Tensor) and t.requires_grad):
                return
            leaves = _leaves(t)
            if not _other_network(x, leaves, event.input_node):
                return
            message = "soft-target-untrained" if _untrained(ev, leaves, x) else "soft-target"
            yield Detection(message, t, {"call": event, "x": x, "role": "soft target"})
            return
        if isinstance(t, torch.Tensor) and t.requires_grad:
            if x_rg:
                leaves = _leaves(t)
                if _own_distribution(event.func, t) and not _other_network(x, leaves):
                    # a distribution of the prediction's own network as the target of a KL or
                    # cross-entropy (R-Drop's `kl_div(log_softmax(out1), softmax(out2))` over two
                    # dropout passes): both sides trained on purpose, as for a product written out
                    yield from out
                    return
                message = ("target-untrained" if _untrained(ev, leaves, x) and _other_network(x, leaves)
                           else "target")
                out.append(Detection(message, t, {"call": event, "x": x, "role": "target"}))
            elif (isinstance(x, torch.Tensor) and x.grad_fn is None and ev.recording_details()
                  and not ev.cuts_behind(x)):
                # Swapped arguments: the input is plain data (never part of a graph, unlike the
                # VQ-VAE commitment loss's detach() of a graph tensor), the prediction is the target.
                # a symmetric loss gives the same value and gradient either way: only the
                # wording is swapped (a diffusion model's loss(noise, predicted_noise))
                message = "swapped-symmetric" if event.func in self._SYMMETRIC else "swapped"
                out.append(Detection(message, t, {"call": event, "x": x, "role": "target"}))
        yield from out

    def describe(self, d: Detection, event: LossCall | ProductOp, ctx: RuleContext) -> Finding:
        # the loss call judged: for a hand-written product, the call detect made of it
        return self._report(ctx, d.facts["call"], d.facts["x"], d.subject, d.facts["role"], d.message)

    def _report(self, ctx: RuleContext, event: LossCall, x: object, t: torch.Tensor, role: str,
                message: str) -> Finding:
        swapped = message.startswith("swapped")
        leaves = _leaves(t)
        subject = ctx.subject(t)
        source = None if swapped else _source(t, ctx.creation)
        related = []
        if (source is not None and leaves and _other_network(x, leaves, event.input_node)
                and _carries_all(source.value, leaves)):
            # a target network, not the prediction's: its output inside the target is to detach
            subject = ctx.subject(source.value, hit=source)
            made = subject.created_at
            if made is not None and source.name:
                # `q_next = net(s).max(1)[0]; q_next = q_next * mask`: the first assignment too
                for loc in target_lines(made.file, made.line, source.name)[-3:-1]:
                    related.append(Related(Role.ASSIGNED_AT, source.name, None, loc))
        name = subject.name
        labels = []
        for leaf in leaves[:4]:
            label = leaf_label(ctx, leaf)
            made = ctx.creation(leaf)
            related.append(Related(Role.FROM_LEAF, label, None, ctx.loc(made[0]) if made else None))
            labels.append(label or (f"a requires-grad tensor made at line {made[0][0].line}" if made and made[0] else "a requires-grad leaf"))
        if source is not None and source.name != name:
            made = ctx.creation(source.value)
            related.append(Related(Role.FROM, source.name, None, ctx.loc(made[0]) if made else None))
        if swapped:
            fix = (f"swap the arguments: {event.func}(prediction, target), with {name or 'the prediction'} first"
                   if name else f"swap the arguments: {event.func}(prediction, target)")
        elif event.written and event.input_node is not None:
            # a KL written out: the target is in the product twice (p and log p)
            fix = (f"detach {name} for both the probability and its log in the product (a "
                   f"detached probability alone still sends gradient through the log)" if name
                   else "detach the target distribution for both the probability and its log")
        elif event.written:
            fix = (f"use {name}.detach() in the product (where {name} enters it)" if name
                   else "detach the probability side of the product")
        else:
            fix = (f"pass {name}.detach(), or build {name} under torch.no_grad()" if name
                   else f"pass the {role.strip('`=')}.detach(), or build it under torch.no_grad()")
        # a swap is made at the loss call; a detach where the target is made
        # (a hand-written product: where the target enters it, since the tensor may train its own
        # network elsewhere: `softmax(logit_S2.detach()) * log_softmax(...)`)
        related += ctx.fix_at(ctx.loc(event.site) if swapped or event.written
                              else (subject.created_at or ctx.loc(event.site)),
                              name, "swap" if swapped else "detach")
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"func": event.func, "role": role,
                             "leaves": "from " + ", ".join(labels) if labels else "it has history",
                             "fix": fix, "name": display(name, "The target")}, related,
                            message=message,
                            graph=snapshot_from_tensors(
                                [x, t] if isinstance(x, torch.Tensor) else [t], ctx.stamp_key,
                                highlight={1 if isinstance(x, torch.Tensor) else 0: ["target"]},
                                labels={1 if isinstance(x, torch.Tensor) else 0: name} if name else None,
                                creation=ctx.creation,
                                entry=call_node("entry", "probability * log-probability" if event.written
                                                else f"{event.func}()", ctx.loc(event.site), ctx.iteration),
                                title=f"GG002: {name or 'the ' + role} requires grad"))


# losses whose target is a distribution (probabilities; kl_div's may be log-probabilities)
_DISTRIBUTION_LOSSES = frozenset({"kl_div", "cross_entropy", "binary_cross_entropy",
                                  "binary_cross_entropy_with_logits"})


def _own_distribution(func: str, t: torch.Tensor) -> bool:
    """Whether `t`, the target of the loss `func`, is a distribution the graph made (a softmax or
    sigmoid output, or for kl_div's `log_target=True` a log_softmax): then a target from the
    prediction's own parameters is a consistency term (R-Drop), not a constant left attached."""
    if func not in _DISTRIBUTION_LOSSES or t.grad_fn is None:
        return False
    return prob_node(t.grad_fn) is not None or (func == "kl_div" and logp_node(t.grad_fn) is not None)


def _untrained(ev: Evidence, leaves: list[torch.Tensor], prediction: Any = None) -> bool:
    """Whether the target's gradient only reaches parameters no optimizer holds (a teacher or a
    target network run with grad on): wasted work, not a wrong update. Only when some optimizer
    holds parameters: a hand-written update loop has none, and then nothing tells what trains.
    Only a network's parameters (nn.Parameter): a loose requires-grad tensor is no network left
    out on purpose. An optimizer built before the guard is known from its first step on: until
    then, the live optimizers are asked (the collector)."""
    if not leaves or not all(isinstance(v, torch.nn.Parameter) for v in leaves):
        # a loose requires-grad tensor behind the target (`scale = torch.ones(1,
        # requires_grad=True)`) is no network frozen by leaving it out: most often the target
        # was built once with it and goes stale, the error's story
        return False
    if ev.any_optimized():
        return not any(ev.is_optimized(v) for v in leaves)
    # NOTE [optimizers before the guard]: no optimizer was given parameters or stepped under the
    # guard yet: one built before the guard is known from its first step only, and the first
    # loss call comes before it (a distillation loop's first iteration, in raise mode: the
    # warning must not become an error). The live optimizers are asked, found by the collector
    # whether or not a name reaches them. Only an optimizer that holds a parameter behind the
    # prediction counts (the network being trained): another live optimizer (an earlier
    # experiment's in a notebook, another test's) tells nothing about this loss.
    mine = {id(v) for v in _leaves(prediction)} if isinstance(prediction, torch.Tensor) else set()
    held: set[int] = set()
    for opt in ev.live_optimizers():
        params = {id(p) for g in opt.param_groups for p in g["params"]}
        if params & mine:
            held |= params
    return bool(held) and not any(id(v) in held for v in leaves)


def _walk_behind(root: Any, ids: set[int] | None = None) -> tuple[list[Any], list[torch.Tensor], bool]:
    """The graph below the node `root` (included), breadth-first: (its nodes, its requires-grad
    leaves, whether one of the leaves whose ids are `ids` is among them). Not cut by a count: the
    verdicts here compare the leaves behind two tensors, and a walk stopped early would miss a
    large model's own parameters and take them for another network's. With `ids`, the walk ends
    at the first such leaf (the answer a full walk gives, sooner when the two sides share a
    parameter near the top); otherwise at the graph's end. A visited set keeps it to one visit
    per node: a few microseconds each, ~0.1 s for 20,000 nodes, most of it PyTorch making the
    nodes' Python wrappers (test_gg002_large_graph bounds it)."""
    nodes = [root]
    leaves: list[torch.Tensor] = []
    seen = {id(root)}
    add = seen.add
    i = 0
    # `nodes` is the queue and holds every wrapper until the walk is dropped (ids stay unique)
    while i < len(nodes):
        nxts = nodes[i].next_functions
        if not nxts:  # only a node without inputs can be a leaf's AccumulateGrad
            leaf = leaf_of(nodes[i])
            if leaf is not None:
                if ids is not None and id(leaf) in ids:
                    return nodes, leaves, True
                leaves.append(leaf)
        for nxt, _ in nxts:
            if nxt is not None and id(nxt) not in seen:
                add(id(nxt))
                nodes.append(nxt)
        i += 1
    return nodes, leaves, False


def _leaves_behind(root: Any) -> list[torch.Tensor]:
    """The requires-grad leaves of the graph below the node `root`."""
    return _walk_behind(root)[1]


def _leaves(t: torch.Tensor) -> list[torch.Tensor]:
    """The requires-grad leaves behind `t` (`t` itself for a leaf)."""
    if t.grad_fn is None:
        return [t]
    return _leaves_behind(t.grad_fn)


def _other_network(x: object, leaves: list[torch.Tensor], node: Any = None) -> bool:
    """Whether the target's requires-grad leaves are none of the prediction's (a separate target
    network), rather than the prediction's own parameters. `node`, when given, is the
    prediction's graph node inside `x` (q's side of a log difference `log p - log q`): the
    prediction's leaves are the ones behind it."""
    if node is None:
        if not isinstance(x, torch.Tensor) or x.grad_fn is None:
            return True
        node = x.grad_fn
    return not (leaves and _walk_behind(node, {id(v) for v in leaves})[2])


def _carries_all(source: object, leaves: list[torch.Tensor]) -> bool:
    """Whether every requires-grad leaf behind the target is behind `source` too: detaching the
    source then detaches the target. A target mixing two networks' outputs (SAC's
    `critic_value - log_probs`) is named itself, since detaching one term leaves the other."""
    if not isinstance(source, torch.Tensor) or source.grad_fn is None:
        return False
    mine = {id(v) for v in _leaves_behind(source.grad_fn)}
    return all(id(v) in mine for v in leaves)


def _source(t: torch.Tensor, made: Callable[[torch.Tensor], Any] | None = None) -> NameHit | None:
    """The user's named tensor nearest to `t` inside `t`'s history (its breadth-first first), or
    None. `made` (ctx.creation) picks, among frames holding it by that name, one that made it."""
    if t.grad_fn is None:
        return None
    nodes = _walk_behind(t.grad_fn)[0]
    order = {id(n): i for i, n in enumerate(nodes)}
    root = id(nodes[0])

    def match(v: object) -> bool:
        if not isinstance(v, torch.Tensor) or v is t:
            return False
        gf = v.grad_fn
        return gf is not None and id(gf) in order and id(gf) != root

    hits = find_names(match)
    if not hits:
        return None
    best = min(hits, key=lambda h: order.get(id(h.value.grad_fn), 1 << 30))
    if made is not None:
        # the same tensor under the same name in an outer frame that made it (a helper's
        # parameter `logit_S2` of the caller's `logit_S2 = net2(x)`): that frame dates it
        where = made(best.value)
        for h in hits:
            if h.value is best.value and h.name == best.name and where and any(
                    fr.file == h.frame.file and fr.function == h.frame.function for fr in where[0]):
                return h
    return best
