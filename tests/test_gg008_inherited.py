"""GG008 on a layer a subclass inherits and does not use: told (info), not alarmed.

JEM's CCF subclasses F and overrides `forward` without `energy_output`, which F's `__init__`
builds and F's `forward` uses: the layer sits in the optimizer and never trains, by the
subclass's design. The run shows it (the live class's `forward` replaces a base class's
`forward` whose code loads the attribute), so GG008 tells it as `inherited-unused` (info). The
same head in a class whose only `forward` never calls it is still the `never-called` warning,
and a subclass that reaches the head through `super().forward` trains it and is silent. Plain
PyTorch leaves the inherited head untrained (asserted).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from casekit import load_case
from graphguard import GraphGuard
from lines import marker_lines

_COMMON = """\
import torch
import torch.nn as nn


{classes}

def train(steps=4):
    torch.manual_seed(0)
    {make}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        x, y = torch.randn(8, 4), torch.randn(8, 3)
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()  # step
    return model


def probe(model):
    return {probe}
"""

_BASE = """\
class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.energy = nn.Linear(8, 3)  # built

    def forward(self, x):
        return self.energy(torch.relu(self.body(x)))

    def classify(self, x):
        return self.cls(torch.relu(self.body(x)))
"""

PROGRAMS = {
    # the subclass's forward replaces Base's and goes through classify(): energy never trains
    "inherited": (_BASE + """

class Sub(Base):
    def __init__(self):
        super().__init__()
        self.cls = nn.Linear(8, 3)

    def forward(self, x):
        return self.classify(x)
""", "model = Sub()", "model.energy.weight"),
    # the same, one level down: the model's backbone is the subclass
    "inherited-nested": (_BASE + """

class Sub(Base):
    def __init__(self):
        super().__init__()
        self.cls = nn.Linear(8, 3)

    def forward(self, x):
        return self.classify(x)


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Sub()

    def forward(self, x):
        return self.backbone(x)
""", "model = Wrapper()", "model.backbone.energy.weight"),
    # no base class uses it: a head the forward forgets is a warning
    "forgotten": ("""\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.cls = nn.Linear(8, 3)
        self.energy = nn.Linear(8, 3)  # built

    def forward(self, x):
        return self.cls(torch.relu(self.body(x)))
""", "model = Net()", "model.energy.weight"),
    # the override reaches Base's forward: the head trains
    "super-forward": (_BASE + """

class Sub(Base):
    def __init__(self):
        super().__init__()
        self.cls = nn.Linear(8, 3)

    def forward(self, x):
        return super().forward(x) + self.classify(x)
""", "model = Sub()", "model.energy.weight"),
}


def _load(tmp_path: Path, name: str):
    classes, make, probe = PROGRAMS[name]
    path = tmp_path / f"gg008_{name.replace('-', '_')}.py"
    path.write_text(_COMMON.format(classes=classes.rstrip() + "\n", make=make, probe=probe))
    return load_case(path), path


@pytest.mark.parametrize("name", ["inherited", "inherited-nested", "forgotten"])
def test_plain_torch_leaves_the_head_untrained(tmp_path: Path, name: str) -> None:
    mod, _ = _load(tmp_path, name)
    torch.manual_seed(0)
    before = mod.probe(mod.train(steps=0)).detach().clone()
    assert torch.equal(mod.probe(mod.train()).detach(), before)


@pytest.mark.parametrize("name,message,severity,subject", [
    ("inherited", "GG008.inherited-unused", "info", "model.energy"),
    ("inherited-nested", "GG008.inherited-unused", "info", "model.backbone.energy"),
    ("forgotten", "GG008.never-called", "warning", "model.energy"),
])
def test_the_unused_head_is_told_by_what_the_classes_show(
        tmp_path: Path, name: str, message: str, severity: str, subject: str) -> None:
    mod, path = _load(tmp_path, name)
    with GraphGuard(mode="collect") as guard:
        mod.train()
    lines = marker_lines(path)
    found = [(f.message_id, f.severity, f.subject.name, f.location.line,
              f.subject.created_at.line if f.subject.created_at else None)
             for f in guard.findings]
    assert found == [(message, severity, subject, lines("step"), lines("built"))]


def test_a_subclass_that_calls_the_base_forward_is_silent(tmp_path: Path) -> None:
    mod, _ = _load(tmp_path, "super-forward")
    before = mod.probe(mod.train(steps=0)).detach().clone()
    with GraphGuard(mode="collect") as guard:
        model = mod.train()
    assert not torch.equal(mod.probe(model).detach(), before)
    assert [(f.code, f.message_id) for f in guard.findings] == []
