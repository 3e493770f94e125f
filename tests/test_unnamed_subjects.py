"""A finding whose subject no name reaches is still reported, with the best description there is.

Whether GG008 reports a parameter that never gets a gradient is decided by the run (the optimizer
holds it, no backward reached it, a live module still registers it), not by whether the name
search finds the module: here the model parts live in a slotted dataclass, which the search does
not look into. A parameter of a layer that was replaced after the optimizer was built (no live
module registers it) is dead weight, not a part of the model that fails to learn: still silent.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from graphguard import GraphGuard

_UNNAMED = '''\
import itertools

import torch
import torch.nn as nn
import torch.nn.functional as F


class Nets:
    def __init__(self):
        self.backbone = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        self.aux_head = nn.Linear(8, 3)


class State:
    def __init__(self):
        self.nets = Nets()


class Trainer:
    def __init__(self):
        self.state = State()
        nets = self.state.nets
        self.opt = torch.optim.SGD(itertools.chain(nets.backbone.parameters(),
                                                   nets.aux_head.parameters()), lr=0.1)  # optimizer

    def fit(self, steps=6):
        for _ in range(steps):
            x, y = torch.randn(16, 4), torch.randn(16, 1)
            loss = F.mse_loss(self.state.nets.backbone(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()  # step


def train():
    torch.manual_seed(0)
    trainer = Trainer()
    trainer.fit()
    return trainer.state.nets
'''

# the same parts named through containers the name search reads: a slotted dataclass, a dict
_NAMED = {
    "slotted-dataclass": ('''\
from dataclasses import dataclass


@dataclass(slots=True)
class Models:
    backbone: nn.Module
    aux_head: nn.Module
''', "models = Models(backbone, aux_head)", "models.backbone", "models.aux_head"),
    "dict": ("", "models = {'backbone': backbone, 'aux_head': aux_head}", "models['backbone']",
             "models['aux_head']"),
}

_NAMED_TEMPLATE = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
{helpers}

def train(steps=6):
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    aux_head = nn.Linear(8, 3)
    {bundle}
    del backbone, aux_head  # only the bundle holds them
    opt = torch.optim.SGD([*{first}.parameters(), *{second}.parameters()], lr=0.1)
    for _ in range(steps):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        loss = F.mse_loss({first}(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()  # step
    return {second}
'''


_REPLACED = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


def train(steps=6):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    head = nn.Linear(8, 1)
    opt.add_param_group({"params": head.parameters()})
    model[2] = head  # the old head is gone; the optimizer still holds its parameters
    for _ in range(steps):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model
'''


def _load(tmp_path: Path, name: str, source: str):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return path, mod


def _line(path: Path, marker: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if marker in text)


# the same program with the models held only by a closure's cell (`self.nets()`): no name
# search reads a cell, so no name reaches the head module nor its parameters
_UNNAMED_CELL = (_UNNAMED
                 .replace("        self.state = State()\n        nets = self.state.nets\n",
                          "        held = State().nets\n        self.nets = lambda: held\n        nets = self.nets()\n")
                 .replace("self.state.nets", "self.nets()")
                 .replace("trainer.state.nets", "trainer.nets()"))


def test_a_never_called_module_three_attributes_deep_is_named_by_its_module(tmp_path: Path) -> None:
    # the head's parameters are past the name search's depth, the head module is not: GG008 asks
    # for the name of the module that registers them (the module tree), and the user's path is found
    path, mod = _load(tmp_path, "named_aux", _UNNAMED)
    guard = GraphGuard(mode="collect")
    with guard:
        mod.train()
    got = [(f.code, f.severity, f.location.line, f.subject.name) for f in guard.findings]
    assert got == [("GG008", "warning", _line(path, "# step"), "self.state.nets.aux_head")], got
    assert guard.findings[0].subject.created_at.line == _line(path, "self.aux_head = nn.Linear")


def test_a_never_called_module_no_name_reaches_is_still_gg008(tmp_path: Path) -> None:
    path, mod = _load(tmp_path, "unnamed_aux", _UNNAMED_CELL)
    assert "self.state" not in _UNNAMED_CELL  # the program really holds the models in a cell
    plain = mod.train()  # plain PyTorch: runs, and the head never learns
    assert plain.aux_head.weight.grad is None and plain.backbone[0].weight.grad is not None
    guard = GraphGuard(mode="collect")
    with guard:
        mod.train()
    got = [(f.code, f.severity, f.location.line) for f in guard.findings]
    assert got == [("GG008", "warning", _line(path, "# step"))], got
    f = guard.findings[0]
    assert f.subject.name is None  # never invented
    assert f.args["name"].startswith("Parameter `weight` (shape (3, 8))")
    fix_at = [r.location.line for r in f.related if r.role == "fix-at"]
    assert fix_at == [_line(path, "# optimizer") - 1]  # the statement that builds the optimizer


def test_the_parameters_of_a_replaced_layer_are_dead_weight_not_gg008(tmp_path: Path) -> None:
    _, mod = _load(tmp_path, "replaced_head", _REPLACED)
    mod.train()
    guard = GraphGuard(mode="collect")
    with guard:
        mod.train()
    assert "GG008" not in [f.code for f in guard.findings]


@pytest.mark.parametrize("bundle", list(_NAMED))
def test_modules_bundled_in_a_dataclass_or_dict_are_named(tmp_path: Path, bundle: str) -> None:
    helpers, make, first, second = _NAMED[bundle]
    path, mod = _load(tmp_path, f"bundle_{bundle.replace('-', '_')}", _NAMED_TEMPLATE.format(
        helpers=helpers, bundle=make, first=first, second=second))
    assert mod.train().weight.grad is None  # plain PyTorch: the head never learns
    guard = GraphGuard(mode="collect")
    with guard:
        mod.train()
    got = [(f.code, f.subject.name, f.location.line) for f in guard.findings]
    assert got == [("GG008", second, _line(path, "# step"))], got
