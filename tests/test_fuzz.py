"""Property-based tests: hypothesis writes small random training programs (MLP depth and width,
activation, optimizer, number of steps, how gradients are zeroed, and legitimate patterns:
gradient accumulation, two losses with retain_graph, truncated BPTT, a detached teacher target,
a create_graph gradient penalty). Correct programs must produce no finding of severity warning or
error; a program with one injected misuse must produce the matching rule code.

Bounded for CI (25 examples per property); `GRAPHGUARD_FUZZ=long` runs 500 per property.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from graphguard import GraphGuard  # noqa: E402
from graphguard.rules import ALL_RULES  # noqa: E402

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("long" if os.environ.get("GRAPHGUARD_FUZZ") == "long" else "ci")

REGISTERED = {r.code for r in ALL_RULES}

OPTIMIZERS = ("sgd", "momentum", "adam", "adamw", "rmsprop", "adagrad")
PATTERNS = ("plain", "accumulate", "two_losses", "tbptt", "teacher", "penalty")
ZERO_GRAD = ("optimizer", "optimizer_keep", "model", "set_none")
ZERO_AT = ("loop_start", "before_backward", "after_step")
CUTS = ("detach", "threshold", "no_grad", "item", "argmax", "whole")


@dataclass(frozen=True)
class Program:
    depth: int  # hidden layers
    width: int
    activation: str
    optimizer: str
    steps: int  # optimizer steps
    pattern: str
    zero_grad: str
    zero_at: str  # where the loop zeroes gradients (ZERO_AT)
    seed: int
    misuse: str | None = None  # carry | no_zero_grad | inplace_saved | cut | total_loss
    cut: str = "detach"  # how `cut` cuts (CUTS)


# ---- the program, written the way users write training loops ---------------------------------
class MLP(nn.Module):
    def __init__(self, p: Program, n_in: int = 5) -> None:
        super().__init__()
        self.p = p
        dims = [n_in] + [p.width] * p.depth
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.head = nn.Linear(dims[-1], 1)
        # truncated BPTT: a recurrent cell whose hidden state is carried (detached) between steps
        self.cell = nn.RNNCell(n_in, n_in) if p.pattern == "tbptt" else None
        self.act = {"relu": F.relu, "tanh": torch.tanh, "gelu": F.gelu, "sigmoid": torch.sigmoid}[p.activation]

    def features(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for i, layer in enumerate(self.hidden):
            cut_here = self.p.misuse == "cut" and i == 0 and self.p.cut != "whole"
            if cut_here and self.p.cut == "no_grad":
                with torch.no_grad():
                    h = self.act(layer(h))
                continue
            h = self.act(layer(h))
            if cut_here:
                h = cut(h, self.p.cut)
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x)
        out = self.head(h)
        if self.p.misuse == "inplace_saved":
            h.mul_(0.5)  # "rescale the features for logging", after the head saved them
        if self.p.misuse == "cut" and self.p.cut == "whole":
            out = out.detach()
        return out


def cut(h: torch.Tensor, how: str) -> torch.Tensor:
    """A non-differentiable step in the middle of the model: no gradient flows back through it."""
    if how == "detach":
        return h.detach()
    if how == "threshold":
        return (h > h.mean()).float()
    if how == "item":
        return torch.full_like(h, h.mean().item())
    if how == "argmax":
        return F.one_hot(h.argmax(dim=1), h.shape[1]).float()
    raise ValueError(how)


def make_optimizer(name: str, params) -> torch.optim.Optimizer:
    params = list(params)
    return {"sgd": lambda: torch.optim.SGD(params, lr=0.05),
            "momentum": lambda: torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True),
            "adam": lambda: torch.optim.Adam(params, lr=1e-2),
            "adamw": lambda: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01),
            "rmsprop": lambda: torch.optim.RMSprop(params, lr=1e-3),
            "adagrad": lambda: torch.optim.Adagrad(params, lr=1e-2)}[name]()


def zero(p: Program, opt: torch.optim.Optimizer, model: nn.Module) -> None:
    if p.misuse == "no_zero_grad":
        return  # the injected bug
    if p.zero_grad == "optimizer":
        opt.zero_grad()
    elif p.zero_grad == "optimizer_keep":
        opt.zero_grad(set_to_none=False)
    elif p.zero_grad == "model":
        model.zero_grad()
    else:
        for q in model.parameters():
            q.grad = None


def run(p: Program) -> list[torch.Tensor]:
    """One random training program; its trained parameters. Raises whatever PyTorch raises."""
    torch.manual_seed(p.seed)
    gen = torch.Generator().manual_seed(p.seed)
    model = MLP(p)
    opt = make_optimizer(p.optimizer, model.parameters())

    def batch(n: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(n, 5, generator=gen)
        return x, x[:, :1] * 0.5 - x[:, 1:2]

    running = torch.zeros(())  # carried statistic (the `carry` misuse forgets to detach it)
    total_loss = 0.0
    if p.pattern == "tbptt":
        hidden = torch.zeros(8, 5)
    if p.pattern == "teacher":
        teacher = MLP(p)
        teacher.load_state_dict(model.state_dict())
    for step in range(p.steps):
        windowed = p.pattern in ("accumulate", "two_losses")  # several backward calls per step
        if p.zero_at == "loop_start" or (windowed and p.zero_at == "before_backward"):
            zero(p, opt, model)
        if p.pattern == "accumulate":
            for micro in range(2):
                x, y = batch()
                loss = F.mse_loss(model(x), y) / 2
                loss.backward()
        elif p.pattern == "two_losses":
            x, y = batch()
            feats = model.features(x)
            loss_a = F.mse_loss(model.head(feats), y)
            loss_b = feats.pow(2).mean() * 0.01
            loss_a.backward(retain_graph=True)
            loss_b.backward()
            loss = loss_a
        else:
            x, y = batch()
            if p.pattern == "tbptt":
                hidden = hidden.detach()  # truncated BPTT
                hidden = model.cell(x, hidden)
                x = x + hidden
            if p.pattern == "teacher":
                with torch.no_grad():
                    y = y + 0.1 * teacher(x)
            if p.pattern == "penalty":
                x = x.requires_grad_()
            pred = model(x)
            loss = F.mse_loss(pred, y)
            if p.pattern == "penalty":  # WGAN-GP style: a gradient as part of the loss
                (gx,) = torch.autograd.grad(pred.sum(), x, create_graph=True)
                loss = loss + 0.1 * (gx.norm(dim=1) - 1).pow(2).mean()
            if p.misuse == "carry":
                running = 0.9 * running + 0.1 * pred.mean()  # no .detach(): grows every step
                loss = loss + 0.01 * running
            if p.zero_at == "before_backward":
                zero(p, opt, model)
            loss.backward()
        opt.step()
        if p.zero_at == "after_step":
            zero(p, opt, model)
        if p.misuse == "total_loss":
            total_loss += loss  # keeps every iteration's graph alive
        else:
            total_loss += loss.item()
    return [q.detach().clone() for q in model.parameters()]


def guarded(p: Program) -> tuple[GraphGuard, BaseException | None]:
    err = None
    with GraphGuard(mode="collect") as guard:
        try:
            run(p)
        except RuntimeError as e:  # the misuse may crash PyTorch itself: that is the point
            err = e
    return guard, err


def loud(guard: GraphGuard) -> list[tuple[str, str | None]]:
    return [(f.code, f.subject.name) for f in guard.findings if f.severity in ("warning", "error")]


# ---- strategies -------------------------------------------------------------------------------
def programs(misuse: str | None = None, patterns=PATTERNS, min_steps: int = 2):
    return st.builds(
        Program,
        depth=st.integers(1, 3),
        width=st.integers(2, 8),
        activation=st.sampled_from(("relu", "tanh", "gelu", "sigmoid")),
        optimizer=st.sampled_from(OPTIMIZERS),
        steps=st.integers(min_steps, 4),
        pattern=st.sampled_from(patterns),
        zero_grad=st.sampled_from(ZERO_GRAD),
        zero_at=st.sampled_from(ZERO_AT),
        seed=st.integers(0, 2**16),
        misuse=st.just(misuse),
        cut=st.sampled_from(CUTS),
    )


def need(code: str) -> None:
    if code not in REGISTERED:
        pytest.skip(f"rule {code} is not registered in ALL_RULES yet")


# ---- properties -------------------------------------------------------------------------------
@given(programs())
def test_correct_programs_are_quiet(p):
    guard, err = guarded(p)
    assert err is None, f"{p}: {err!r}"
    assert loud(guard) == [], p


@given(programs())
def test_the_guard_does_not_change_training(p):
    plain = run(p)
    with GraphGuard(mode="collect"):
        got = run(p)
    assert all(torch.equal(a, b) for a, b in zip(plain, got)), p


@given(programs("carry", patterns=("plain", "teacher", "penalty", "tbptt")))
def test_carried_tensor_is_found(p):
    guard, _ = guarded(p)
    assert {"GG001", "GG004"} & {c for c, _ in loud(guard)}, p
    assert ("GG004", "running") in loud(guard) or ("GG001", "running") in loud(guard), (p, loud(guard))


@given(programs("no_zero_grad"))
def test_missing_zero_grad_is_found(p):
    need("GG010")
    guard, err = guarded(p)
    assert err is None, f"{p}: {err!r}"
    assert "GG010" in {c for c, _ in loud(guard)}, p


@given(programs("inplace_saved", patterns=("plain", "accumulate", "teacher", "tbptt")))
def test_inplace_change_of_a_saved_tensor_is_found(p):
    need("GG005")
    guard, err = guarded(p)
    assert err is not None  # PyTorch's version check still fires (graphguard's unpack hook)
    assert ("GG005", "h") in loud(guard), (p, loud(guard))


@given(programs("cut", patterns=("plain", "accumulate", "teacher", "tbptt")))
def test_cut_parameter_path_is_found(p):
    guard, err = guarded(p)
    found = {c for c, _ in loud(guard)}
    if p.cut == "whole":
        assert "GG009" in found, (p, loud(guard))  # nothing of the loss requires grad any more
    else:  # the first layer (and the recurrent cell feeding it) lose their gradient
        # run inside the program's own no_grad block, that part of the model is GG014's (GG008
        # leaves its parameters to it); cut any other way, GG008's
        codes = ("GG014", "GG008") if p.cut == "no_grad" else ("GG008",)
        assert found & set(codes), (p, loud(guard))
        # named per parameter, or once per module whose parameters all lost their gradient
        # (the whole `model.hidden` container when it has one layer)
        whole = {"model.hidden[0]", "model.cell"} | ({"model.hidden"} if p.depth == 1 else set())
        assert all(name and (name in whole or name.startswith(("model.hidden[0].", "model.cell.")))
                   for c, name in loud(guard) if c in codes), (p, loud(guard))


# GG101 wants a pile: graphs of three iterations or more held together (two could be a kept loss)
@given(programs("total_loss", patterns=("plain", "teacher", "accumulate"), min_steps=3))
def test_total_loss_graph_leak_is_found(p):
    need("GG101")
    guard, err = guarded(p)
    assert err is None, f"{p}: {err!r}"
    assert ("GG101", "total_loss") in loud(guard), (p, loud(guard))
