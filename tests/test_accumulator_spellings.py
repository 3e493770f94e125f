"""A loss accumulator grown again after its backward without a reset, spelled many ways.

SAM's second pass (benchmarks/realbugs/cases/stale-graph/sam_two_passes.py) adds the new terms to
the `loss` that the first backward already ran: the second backward runs the freed graph again.
GG001 decides that from the run (this graph holds the node the earlier backward started from,
rules/shared/accumulator.py), not from how the accumulator is written. Each row is one spelling;
the program really crashes under plain PyTorch (asserted), and graphguard reports GG001 at the
second backward, naming the accumulator. Twins: the same loop with the reset in place is silent,
and two losses that only share a trunk stay GG003's.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from graphguard import GraphGuard

# name -> (module-level helpers, the accumulator's start, the statement that grows it, the root)
_SPELLINGS = {
    "augmented": ("", "loss = 0", "loss += loss_t", "loss"),
    "rebound": ("", "loss = 0", "loss = loss + loss_t", "loss"),
    "tensor-start": ("", "loss = torch.zeros(())", "loss = loss + loss_t", "loss"),
    "in-place-method": ("", "loss = torch.zeros(())", "loss.add_(loss_t)", "loss"),
    "helper": ("def accumulate(total, term):\n    return total + term\n",
               "loss = 0", "loss = accumulate(loss, loss_t)", "loss"),
    "builtin-sum": ("", "loss = torch.zeros(())", "loss = sum([loss, loss_t])", "loss"),
    "stacked": ("", "loss = torch.zeros(())", "loss = torch.stack([loss, loss_t]).sum()", "loss"),
    "dict-entry": ("", "stats = {'loss': 0}", "stats['loss'] += loss_t", "stats['loss']"),
    "attribute": ("class Meter:\n    pass\n", "meter = Meter()\n        meter.total = 0",
                  "meter.total += loss_t", "meter.total"),
}

_TEMPLATE = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
{helpers}

def train():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(6, 4), torch.randn(6, 3)
    for step in range(2):
        out = model(x)
        {start}  # reset
        for t in range(3):
            loss_t = F.mse_loss(out[:, t], y[:, t])
            {grow}
        opt.zero_grad()
        {root}.backward()  # first
        opt.step()
        out = model(x)
        for t in range(3):
            loss_t = F.mse_loss(out[:, t], y[:, t])
            {grow}  # grown again
        opt.zero_grad()
        {root}.backward()  # bites
        opt.step()
'''


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _line(path: Path, marker: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if marker in text)


def _program(tmp_path: Path, name: str, reset_again: bool = False) -> Path:
    helpers, start, grow, root = _SPELLINGS[name]
    source = _TEMPLATE.format(helpers=helpers, start=start, grow=grow, root=root)
    if reset_again:  # the clean twin: the accumulator starts over before the second pass
        first_start = start.splitlines()[-1].strip()
        source = source.replace("        out = model(x)\n        for t in range(3):\n"
                                "            loss_t = F.mse_loss(out[:, t], y[:, t])\n"
                                f"            {grow}  # grown again",
                                f"        out = model(x)\n        {first_start}\n        for t in range(3):\n"
                                "            loss_t = F.mse_loss(out[:, t], y[:, t])\n"
                                f"            {grow}  # grown again")
        assert source.count(first_start) == 2
    path = tmp_path / f"acc_{name.replace('-', '_')}{'_reset' if reset_again else ''}.py"
    path.write_text(source)
    return path


@pytest.mark.parametrize("name", list(_SPELLINGS))
def test_an_accumulator_grown_again_without_a_reset_is_gg001(tmp_path: Path, name: str) -> None:
    path = _program(tmp_path, name)
    mod = _load(path)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        mod.train()  # plain PyTorch: the second backward crashes, naming nothing
    guard = GraphGuard(mode="collect")
    try:
        with guard:
            mod.train()
    except RuntimeError:
        pass
    errors = [(f.code, f.location.line) for f in guard.findings if f.severity == "error"]
    assert errors == [("GG001", _line(path, "# bites"))], errors
    f = guard.findings[0]
    assert f.before_crash
    assert f.subject.name == _SPELLINGS[name][3]
    consumed = [r.location.line for r in f.related if r.role == "consumed-by"]
    assert consumed == [_line(path, "# first")]


@pytest.mark.parametrize("name", ["augmented", "in-place-method", "helper", "dict-entry"])
def test_the_same_loop_with_the_reset_is_silent(tmp_path: Path, name: str) -> None:
    path = _program(tmp_path, name, reset_again=True)
    mod = _load(path)
    mod.train()  # plain PyTorch runs
    guard = GraphGuard(mode="collect")
    with guard:
        mod.train()
    assert [f.code for f in guard.findings if f.severity != "info"] == []


_TRUNK = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


def train():
    torch.manual_seed(0)
    trunk, head_a, head_b = nn.Linear(4, 8), nn.Linear(8, 1), nn.Linear(8, 1)
    opt = torch.optim.SGD([*trunk.parameters(), *head_a.parameters(), *head_b.parameters()], lr=0.1)
    x = torch.randn(6, 4)
    features = torch.tanh(trunk(x))  # shared
    loss_a = F.mse_loss(head_a(features), torch.zeros(6, 1))
    loss_b = F.mse_loss(head_b(features), torch.ones(6, 1))
    opt.zero_grad()
    loss_a.backward()  # first
    {second}  # bites
    opt.step()
'''


@pytest.mark.parametrize("second", ["loss_b.backward()", "(loss_b * 2.0).backward()"])
def test_two_losses_sharing_a_trunk_stay_gg003(tmp_path: Path, second: str) -> None:
    path = tmp_path / "trunk.py"
    path.write_text(_TRUNK.format(second=second))
    mod = _load(path)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        mod.train()
    guard = GraphGuard(mode="collect")
    try:
        with guard:
            mod.train()
    except RuntimeError:
        pass
    errors = [(f.code, f.subject.name, f.location.line) for f in guard.findings if f.severity == "error"]
    assert errors == [("GG003", "features", _line(path, "# bites"))], errors


def test_a_loss_built_with_the_first_before_its_backward_stays_gg003(tmp_path: Path) -> None:
    """`total` holds `loss_a`'s root, but was built before loss_a's backward: two losses of one
    batch backwarded in turn, the double backward GG003 explains."""
    path = tmp_path / "together.py"
    path.write_text(_TRUNK.format(second="total.backward()").replace(
        "    opt.zero_grad()\n", "    total = loss_a + loss_b\n    opt.zero_grad()\n"))
    mod = _load(path)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        mod.train()
    guard = GraphGuard(mode="collect")
    try:
        with guard:
            mod.train()
    except RuntimeError:
        pass
    errors = [(f.code, f.location.line) for f in guard.findings if f.severity == "error"]
    assert errors == [("GG003", _line(path, "# bites"))], errors


_LATE = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


def train(steps=60, forget_from=45):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(6, 4), torch.randn(6, 3)
    for step in range(steps):
        out = model(x)
        loss = 0
        for t in range(3):
            loss += F.mse_loss(out[:, t], y[:, t])
        opt.zero_grad()
        loss.backward()  # first
        opt.step()
        out = model(x)
        if step < forget_from:
            loss = 0  # reset
        for t in range(3):
            loss += F.mse_loss(out[:, t], y[:, t])
        opt.zero_grad()
        loss.backward()  # bites
        opt.step()
'''


def test_a_reset_forgotten_late_is_named_in_light_mode(tmp_path: Path) -> None:
    """The reset goes missing at step 45, long after full recording stopped: no creation lines
    are recorded then, and the accumulator is still named, since the second backward starts from
    the very tensor the first did (grown in place by `loss += ...`)."""
    path = tmp_path / "late_reset.py"
    path.write_text(_LATE)
    mod = _load(path)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        mod.train()
    guard = GraphGuard(mode="collect")
    try:
        with guard:
            mod.train()
    except RuntimeError:
        pass
    got = [(f.code, f.subject.name, f.location.line, f.iteration >= 45) for f in guard.findings]
    assert got == [("GG001", "loss", _line(path, "# bites"), True)], got
    f = guard.findings[0]
    assert f.before_crash
    roles = {r.role: r.location.line for r in f.related if r.location}
    assert roles["consumed-by"] == _line(path, "# first")
    assert roles["fix-at"] == _line(path, "# reset")
