"""An optimizer made by unpickling (copy.deepcopy, torch.load of the whole object) gets its
parameter groups without add_param_group: the guard records them at the user's line that made
the copy (install/optimizer.py, `_wrap_setstate`), so an optimizer copied apart from its model is
reported with that line as the place to fix."""
from __future__ import annotations

import copy
import inspect

import torch
import torch.nn as nn

from graphguard import GraphGuard


def _line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def _train(apart: bool, guarded: bool):
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    guard = GraphGuard(mode="collect") if guarded else None
    if guard is not None:
        guard.__enter__()
    try:
        if apart:
            model2 = copy.deepcopy(model)
            opt2 = copy.deepcopy(opt)  # copied apart
        else:
            model2, opt2 = copy.deepcopy((model, opt))  # copied together
        before = model2.weight.detach().clone()
        for _ in range(3):
            opt2.zero_grad()
            model2(torch.randn(8, 4)).pow(2).mean().backward()
            opt2.step()
    finally:
        if guard is not None:
            guard.__exit__(None, None, None)
    return guard, model2, opt2, before


def test_plain_torch_copy_apart_never_trains():
    _, model2, opt2, before = _train(apart=True, guarded=False)
    assert torch.equal(model2.weight, before)
    assert all(p.grad is None for g in opt2.param_groups for p in g["params"])
    _, model2, _, before = _train(apart=False, guarded=False)
    assert not torch.equal(model2.weight, before)


def test_copy_apart_is_reported_at_the_copy_line():
    guard, *_ = _train(apart=True, guarded=True)
    found = [f for f in guard.findings if f.code == "GG008"]
    assert found, [f.code for f in guard.findings]
    line = _line_of(_train, "# copied apart")
    fix_lines = [r.location.line for f in found for r in f.related if r.role == "fix-at" and r.location]
    assert line in fix_lines


def test_copy_together_stays_silent():
    guard, *_ = _train(apart=False, guarded=True)
    assert [f.code for f in guard.findings if f.severity in ("error", "warning")] == []
