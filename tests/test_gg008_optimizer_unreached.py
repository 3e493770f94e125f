"""GG008 optimizer-unreached is one story per optimizer, whatever the model holds.

An optimizer built over one instance of a model while the loss is computed from another (the
char-rnn tutorial's Trainer built before the model is made again): none of the parameters it
holds reaches a graph. The run tells it once, for all it holds, named by the model the loss
reaches, never once per layer of the model it holds. Plain PyTorch leaves the held model
unchanged and trains nothing (asserted).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from casekit import load_case
from graphguard import GraphGuard
from lines import marker_lines

_PROGRAM = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.i2h = nn.Linear(4, 8)
        self.h2h = nn.Linear(8, 8)
        self.i2o = nn.Linear(8, 2)

    def forward(self, x):
        return self.i2o(torch.tanh(self.h2h(torch.tanh(self.i2h(x)))))


class Trainer:
    def __init__(self, net):
        self.net = net
        self.optimizer = torch.optim.SGD(net.parameters(), lr=0.1)  # built


def train(steps=4):
    torch.manual_seed(0)
    rnn = Net()
    trainer = Trainer(rnn)
    rnn = Net()  # made
    for _ in range(steps):
        x, y = torch.randn(8, 4), torch.randn(8, 2)
        trainer.optimizer.zero_grad()
        loss = ((rnn(x) - y) ** 2).mean()
        loss.backward()
        trainer.optimizer.step()  # step
    return trainer.net
"""


@pytest.fixture
def program(tmp_path: Path):
    path = tmp_path / "gg008_optimizer_over_another_instance.py"
    path.write_text(_PROGRAM)
    return load_case(path), path


def test_plain_torch_trains_nothing_the_optimizer_holds(program) -> None:
    mod, _ = program
    held = mod.train(steps=0)
    before = [p.detach().clone() for p in held.parameters()]
    torch.manual_seed(0)
    held = mod.train()
    assert all(torch.equal(a, b.detach()) for a, b in zip(before, held.parameters()))


def test_one_finding_for_the_optimizer_named_by_the_model_the_loss_reaches(program) -> None:
    mod, path = program
    with GraphGuard(mode="collect") as guard:
        mod.train()
    lines = marker_lines(path)
    found = [(f.message_id, f.subject.name, f.location.line,
              f.subject.created_at.line if f.subject.created_at else None)
             for f in guard.findings]
    assert found == [("GG008.optimizer-unreached", "rnn", lines("step"), lines("made"))]
    fix_at = [r.location.line for r in guard.findings[0].related if r.role.value == "fix-at"]
    assert fix_at == [lines("built")]
