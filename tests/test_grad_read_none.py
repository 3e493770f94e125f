"""GG008 after the fact: the program fails on a `.grad` that is None (`param.grad.data`) because
the parameter's only path to the loss went through integer indices; a read that checks for None
stays quiet."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from graphguard import GraphGuard


def _train(check_none: bool) -> None:
    torch.manual_seed(0)
    scorer, head = nn.Linear(5, 3), nn.Linear(1, 1)
    opt = torch.optim.SGD(list(scorer.parameters()) + list(head.parameters()), lr=0.1)
    x, y = torch.randn(4, 5), torch.randn(4, 1)
    for _ in range(2):
        picked = scorer(x).sort(dim=1).indices[:, :1].float()  # integer indices: no gradient
        loss = ((head(picked) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        for p in scorer.parameters():
            if not check_none or p.grad is not None:
                p.grad.data.clamp_(-1, 1)  # READ
        opt.step()


def test_failing_on_a_none_grad_is_explained_after_the_fact():
    guard = GraphGuard(mode="collect")
    with pytest.raises(AttributeError):
        with guard:
            _train(check_none=False)
    found = [f for f in guard.findings if f.code == "GG008"]
    assert len(found) == 1
    f = found[0]
    assert f.subject.name == "scorer.weight" and f.before_crash is False
    read_line = next(i for i, line in enumerate(open(__file__).read().splitlines(), 1) if "# READ" in line)
    assert f.location.line == read_line


def test_a_read_that_checks_for_none_is_quiet_at_the_read():
    guard = GraphGuard(mode="collect")
    with guard:
        _train(check_none=True)
    # the step still reports the parameters that never got a gradient, not the reads
    assert all(f.location.line != 0 for f in guard.findings)
    read_line = next(i for i, line in enumerate(open(__file__).read().splitlines(), 1) if "# READ" in line)
    assert not any(f.location.line == read_line for f in guard.findings)
