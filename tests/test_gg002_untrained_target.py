"""GG002's severity follows what the target's gradient does: it is an error when it reaches a
parameter some optimizer trains (the prediction's own network, a DQN without a target network,
a teacher that is optimized too), and a warning when it only reaches parameters no optimizer
holds (a frozen teacher or a target network run with grad on): nothing is trained wrongly, but
each backward runs through that network for gradients nobody uses. A warning never stops the
program in raise mode, so a correct (if wasteful) distillation loop trains as without the guard.
"""
from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from graphguard import GraphGuard, GraphGuardWarning, GraphMisuseError
from lines import marker_lines

line_of = marker_lines(__file__)


def _nets():
    torch.manual_seed(0)
    return nn.Linear(4, 3), nn.Linear(4, 3)


def distill(student, teacher, opt, steps=4):
    for _ in range(steps):
        x = torch.randn(8, 4)
        opt.zero_grad()
        loss = F.mse_loss(student(x), teacher(x))  # MSE-TARGET
        loss.backward()
        opt.step()


def soft_targets(student, teacher, opt, steps=4):
    for _ in range(steps):
        x = torch.randn(8, 4)
        opt.zero_grad()
        t_logits = teacher(x)
        kd = -(F.softmax(t_logits, 1) * F.log_softmax(student(x), 1)).sum(1).mean()  # KD-PRODUCT
        kd.backward()
        opt.step()


def dqn_target_network(steps=4):
    torch.manual_seed(0)
    q_net, target_net = nn.Linear(4, 2), nn.Linear(4, 2)
    target_net.load_state_dict(q_net.state_dict())
    opt = torch.optim.SGD(q_net.parameters(), lr=0.1)
    for _ in range(steps):
        s, s2, r = torch.randn(8, 4), torch.randn(8, 4), torch.randn(8)
        q = q_net(s).max(1)[0]
        max_next_q_values = target_net(s2).max(1)[0]
        target = r + 0.9 * max_next_q_values
        loss = F.mse_loss(q, target)  # DQN-TARGET
        opt.zero_grad()
        loss.backward()
        opt.step()
    return q_net, target_net


def test_plain_torch_runs_the_teacher_backward_for_nothing():
    student, teacher = _nets()
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    distill(student, teacher, opt)
    assert teacher.weight.grad is not None and teacher.weight.grad.abs().sum() > 0
    _, target_net = dqn_target_network()
    assert target_net.weight.grad is not None


@pytest.mark.parametrize("program, marker", [(distill, "MSE-TARGET"), (soft_targets, "KD-PRODUCT")])
def test_a_frozen_teacher_run_with_grad_on_is_a_warning(program, marker):
    student, teacher = _nets()
    opt = torch.optim.SGD(student.parameters(), lr=0.1)  # built before the guard: known at report time
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with GraphGuard() as guard:  # raise mode: a warning does not stop training
            program(student, teacher, opt)
    (f,) = [f for f in guard.findings if f.code == "GG002"]
    assert (f.severity, f.location.line) == ("warning", line_of(marker))
    assert any(issubclass(w.category, GraphGuardWarning) for w in caught)


def test_the_guard_does_not_change_a_wasteful_distillation():
    student, teacher = _nets()
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    torch.manual_seed(1)
    distill(student, teacher, opt)
    plain = [p.detach().clone() for p in student.parameters()]
    student, teacher = _nets()
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    torch.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with GraphGuard():
            distill(student, teacher, opt)
    assert all(torch.equal(a, b) for a, b in zip(plain, student.parameters()))


def test_a_target_network_without_an_optimizer_is_a_warning_naming_its_output():
    with GraphGuard(mode="collect") as guard:
        dqn_target_network()
    (f,) = [f for f in guard.findings if f.code == "GG002"]
    assert (f.severity, f.subject.name, f.location.line) == (
        "warning", "max_next_q_values", line_of("DQN-TARGET"))


@pytest.mark.parametrize("program", [distill, soft_targets])
def test_a_teacher_that_is_also_optimized_is_an_error(program):
    student, teacher = _nets()
    opt = torch.optim.SGD(list(student.parameters()) + list(teacher.parameters()), lr=0.1)
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard():
            program(student, teacher, opt)
    (f,) = info.value.findings
    assert (f.code, f.severity) == ("GG002", "error")


def test_a_hand_written_update_loop_keeps_the_error():
    """No optimizer anywhere: nothing tells which parameters train, so the target stays an error."""
    student, teacher = _nets()

    def program():
        for _ in range(3):
            x = torch.randn(8, 4)
            loss = F.mse_loss(student(x), teacher(x))
            loss.backward()
            with torch.no_grad():
                for p in student.parameters():
                    p -= 0.1 * p.grad
                    p.grad = None

    with GraphGuard(mode="collect") as guard:
        program()
    assert [(f.code, f.severity) for f in guard.findings if f.code == "GG002"] == [("GG002", "error")]


def test_a_loose_requires_grad_tensor_behind_the_target_keeps_the_error():
    """No network left out of the optimizer, but a tensor made trainable and used once to build
    the target: the target's graph, built once, is what goes stale. An error, before the crash."""
    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    scale = torch.ones(1, requires_grad=True)
    reference = torch.sin(torch.linspace(0, 3, 8)[:, None] * scale)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard():
            for _ in range(3):
                opt.zero_grad()
                loss = F.mse_loss(net(torch.randn(8, 4)), reference)  # LOOSE-TARGET
                loss.backward()
                opt.step()
    (f,) = info.value.findings
    assert (f.code, f.severity, f.subject.name, f.location.line) == (
        "GG002", "error", "reference", line_of("LOOSE-TARGET"))
