"""GG002 on graphs of 20,000+ autograd nodes: the verdict must be the one a small graph gets.

GG002 asks whether a soft target's gradient reaches parameters the prediction does not depend on
(another network) by comparing the leaves behind the two. A walk cut after a fixed number of
nodes finds none of a deep model's parameters, which sit at the bottom of its graph, and took the
model's own leaves for another network's: a false error on R-Drop's KL between two dropout passes
of one model. The model here is a first Linear layer under thousands of parameter-free residual
steps, so that its only parameters are far from the loss.
"""
from __future__ import annotations


import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from graphguard import GraphGuard
from graphguard.rules.gg002_non_detached_target import _leaves, _other_network
from lines import marker_lines

line_of = marker_lines(__file__)

STEPS = 7000  # residual steps of three nodes each (tanh, scale, add): over 20,000 nodes
MIN_NODES = 20_000


class Deep(nn.Module):
    """A Linear layer, dropout, then `STEPS` parameter-free residual steps: every parameter is
    at the bottom of a graph of 3 * steps nodes."""

    def __init__(self, steps: int = STEPS) -> None:
        super().__init__()
        self.inp = nn.Linear(6, 4)
        self.drop = nn.Dropout(0.2)
        self.steps = steps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.drop(self.inp(x))
        for _ in range(self.steps):
            h = h + 1e-4 * torch.tanh(h)  # a small step: the gradient neither vanishes nor explodes
        return h


def count_nodes(t: torch.Tensor) -> int:
    """The autograd nodes behind `t`, walked through grad_fn.next_functions."""
    seen = {id(t.grad_fn)}
    stack = [t.grad_fn]
    while stack:
        for n, _ in stack.pop().next_functions:
            if n is not None and id(n) not in seen:
                seen.add(id(n))
                stack.append(n)
    return len(seen)


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return torch.randn(8, 6, generator=g), torch.randint(0, 4, (8,), generator=g)


def r_drop(model: nn.Module, opt: torch.optim.Optimizer, steps: int = 2) -> list[int]:
    """R-Drop and an entropy term: both sides of every term come from the same model."""
    sizes = []
    for _ in range(steps):
        x, y = batch()
        out1, out2 = model(x), model(x)  # two dropout passes
        kl = F.kl_div(F.log_softmax(out1, -1), F.softmax(out2, -1), reduction="batchmean")  # RDROP-KL
        p1, p2 = F.softmax(out1, -1), F.softmax(out2, -1)
        kl_written = (p1 * (p1.log() - p2.log())).sum(-1).mean()  # RDROP-WRITTEN
        entropy = -(p1 * torch.log(p1)).sum(-1).mean()  # ENTROPY
        loss = F.cross_entropy(out1, y) + kl + kl_written - 0.1 * entropy
        sizes.append(count_nodes(loss))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return sizes


def test_plain_torch_trains_the_model_through_both_sides_of_r_drop():
    torch.manual_seed(0)
    model = Deep()
    x, _ = batch()
    out1, out2 = model(x), model(x)
    assert count_nodes(out1) >= MIN_NODES
    # the target side alone sends gradient into the model: R-Drop means it to
    F.kl_div(F.log_softmax(out1.detach(), -1), F.softmax(out2, -1), reduction="batchmean").backward()
    assert model.inp.weight.grad is not None and model.inp.weight.grad.abs().sum() > 0


def test_r_drop_and_entropy_on_a_large_graph_are_silent():
    torch.manual_seed(0)
    model = Deep()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with GraphGuard(mode="collect") as guard:
        sizes = r_drop(model, opt, steps=1)  # the first iteration is judged in full
    assert min(sizes) >= MIN_NODES
    assert [f for f in guard.findings if f.code == "GG002"] == []


def test_r_drop_on_a_small_graph_is_silent_too():
    torch.manual_seed(0)
    model = Deep(steps=3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with GraphGuard(mode="collect") as guard:
        r_drop(model, opt)
    assert [f for f in guard.findings if f.code == "GG002"] == []


def distill(teacher: nn.Module, student: nn.Module, opt: torch.optim.Optimizer,
            steps: int = 2) -> list[int]:
    """Distillation with the teacher's soft targets left attached to its graph."""
    sizes = []
    for _ in range(steps):
        x, y = batch()
        t_logits = teacher(x)
        s_logits = student(x)
        kd = -(F.softmax(t_logits, 1) * F.log_softmax(s_logits, 1)).sum(1).mean()  # KD-PRODUCT
        soft_targets = F.softmax(teacher(x) / 2.0, dim=1)
        kl = F.kl_div(F.log_softmax(s_logits / 2.0, dim=1), soft_targets, reduction="batchmean")  # KD-KL
        loss = F.cross_entropy(s_logits, y) + kd + kl
        sizes.append(count_nodes(kd))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return sizes


def test_plain_torch_sends_the_distillation_gradient_into_the_teacher():
    torch.manual_seed(0)
    teacher, student = Deep(), nn.Linear(6, 4)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    distill(teacher, student, opt, steps=1)
    # the teacher is in no optimizer, yet each backward ran through it: the misbehaviour
    assert teacher.inp.weight.grad is not None and teacher.inp.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("teacher_trained, severity", [(False, "warning"), (True, "error")])
def test_a_teachers_soft_targets_on_a_large_graph_are_reported(teacher_trained, severity):
    torch.manual_seed(0)
    teacher, student = Deep(), nn.Linear(6, 4)
    params = list(student.parameters()) + (list(teacher.parameters()) if teacher_trained else [])
    opt = torch.optim.SGD(params, lr=0.1)
    with GraphGuard(mode="collect") as guard:
        sizes = distill(teacher, student, opt, steps=1)
    assert min(sizes) >= MIN_NODES
    found = sorted((f.location.line, f.subject.name, f.severity) for f in guard.findings
                   if f.code == "GG002")
    assert found == sorted([(line_of("KD-PRODUCT"), "t_logits", severity),
                            (line_of("KD-KL"), "soft_targets", severity)])


def test_the_leaf_comparison_is_the_same_on_a_large_graph():
    torch.manual_seed(0)
    model, other = Deep(), Deep()
    x, _ = batch()
    for steps in (3, STEPS):
        model.steps = other.steps = steps
        out1, out2, out3 = model(x), model(x), other(x)
        if steps == STEPS:
            assert count_nodes(out2) >= MIN_NODES
        leaves = _leaves(out2)
        assert {id(v) for v in leaves} == {id(p) for p in model.parameters()}
        # the verdict does not depend on the graph's size (no node-count cut); its cost is a
        # benchmark's question, never a timed test's
        assert _other_network(out1, leaves) is False
        assert _other_network(out3, leaves) is True


def test_a_probability_seen_through_many_shape_ops_is_still_a_soft_target():
    """The recognizer follows sign, scaling and shape ops to the softmax however many there are
    (it stops on the node types, not on a count): twelve here, more than a bound of a few."""
    torch.manual_seed(0)
    teacher, student = nn.Linear(6, 4), nn.Linear(6, 4)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    with GraphGuard(mode="collect") as guard:
        x, _ = batch()
        t_logits = teacher(x)
        p = F.softmax(t_logits, 1)
        for _ in range(6):
            p = p.unsqueeze(0).squeeze(0)
        log_q = F.log_softmax(student(x), 1)
        for _ in range(6):
            log_q = log_q.t().t()
        kd = -torch.einsum("bc,bc->b", p, log_q).mean()  # DEEP-EINSUM
        kd = kd - (p * log_q).sum(1).mean()  # DEEP-PRODUCT
        entropy = -(p * torch.log(p)).sum(1).mean()  # DEEP-ENTROPY
        opt.zero_grad()
        (kd + entropy).backward()
        opt.step()
    found = sorted((f.location.line, f.subject.name) for f in guard.findings if f.code == "GG002")
    assert found == [(line_of("DEEP-EINSUM"), "t_logits"), (line_of("DEEP-PRODUCT"), "t_logits")]
