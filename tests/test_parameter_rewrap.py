"""`nn.Parameter(h)` of a computed tensor (a hypernetwork's weight wrapped in forward) starts a new
leaf: PyTorch drops h's history in C++, so the network that computed h never learns. The guard
records the re-wrap as a cut while recording, and GG008 names it as the reason, at its line."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from graphguard import GraphGuard

from lines import marker_lines

line_of = marker_lines(__file__)


class HyperLinear(nn.Module):
    """A layer whose weight is produced by a small generator network from a task embedding."""

    def __init__(self, rewrap: bool) -> None:
        super().__init__()
        self.generator = nn.Linear(4, 3 * 2)
        self.embedding = nn.Parameter(torch.randn(4))
        self.rewrap = rewrap

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.generator(self.embedding).view(2, 3)
        if self.rewrap:
            self.weight = nn.Parameter(weight)  # the re-wrap
            return F.linear(x, self.weight)
        return F.linear(x, weight)


def _train(model: nn.Module, steps: int = 4) -> torch.optim.Optimizer:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x, y = torch.randn(5, 3, generator=g), torch.randn(5, 2, generator=g)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return opt


def test_plain_torch_never_trains_the_generator() -> None:
    torch.manual_seed(0)
    model = HyperLinear(rewrap=True)
    before = model.generator.weight.detach().clone()
    _train(model)
    assert model.generator.weight.grad is None
    assert torch.equal(model.generator.weight, before)


def test_gg008_names_the_rewrap_as_the_cut() -> None:
    torch.manual_seed(0)
    model = HyperLinear(rewrap=True)
    with GraphGuard(mode="collect") as guard:
        _train(model)
    rewrap = line_of("the re-wrap")
    hits = [f for f in guard.findings if f.code == "GG008" and f.subject.name == "model.generator"]
    assert hits, [(f.code, f.subject.name) for f in guard.findings]
    cuts = [r for r in hits[0].related if r.role == "cut-by"]
    assert [r.location.line for r in cuts] == [rewrap]
    assert rewrap in {r.location.line for r in hits[0].related if r.role == "fix-at"}


def test_a_computed_weight_used_directly_is_silent() -> None:
    torch.manual_seed(0)
    with GraphGuard(mode="collect") as guard:
        _train(HyperLinear(rewrap=False))
    assert [f.code for f in guard.findings] == []


def test_parameters_made_from_data_or_a_detached_copy_are_not_cuts() -> None:
    torch.manual_seed(0)
    teacher = nn.Linear(3, 2)
    with GraphGuard(mode="collect") as guard:
        student = nn.Linear(3, 2)
        # initialised from another network's (detached) weights: a new leaf on purpose
        student.weight = nn.Parameter(teacher.weight.detach().clone())
        student.bias = nn.Parameter(torch.zeros(2))
        _train(student)
    assert [f.code for f in guard.findings] == []
    assert guard.rec.cuts and all(c.op != "nn.Parameter" for c in guard.rec.cuts.values())


def test_parameter_construction_is_restored_and_unchanged() -> None:
    original = nn.Parameter.__new__
    with GraphGuard(mode="collect"):
        assert nn.Parameter.__new__ is not original
        p = nn.Parameter(torch.ones(2), requires_grad=False)
    assert nn.Parameter.__new__ is original
    assert isinstance(p, nn.Parameter) and not p.requires_grad and torch.equal(p, torch.ones(2))
