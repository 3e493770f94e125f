"""GG008 at a `.grad` read that is None because the parameter's only path to the loss went
through integer indices. When the reading instruction goes straight on to use the value as an
object (`param.grad.data`, `.clamp_()`, `[0]`), the program is about to raise on the None: reported
at the read, before the AttributeError. When the None goes into a call that fails inside, it is
explained after the fact. A read that checks for None stays quiet."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from graphguard import GraphGuard


def _train(check_none: bool, use: str = "attribute") -> None:
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
                if use == "attribute":
                    p.grad.data.clamp_(-1, 1)  # READ attribute
                elif use == "method":
                    p.grad.clamp_(-1, 1)  # READ method
                elif use == "subscript":
                    p.grad[0].clamp_(-1, 1)  # READ subscript
                else:
                    torch.clamp(p.grad, -1, 1)  # READ argument
        opt.step()


def _read_line(use: str) -> int:
    return next(i for i, line in enumerate(open(__file__).read().splitlines(), 1)
                if line.endswith(f"# READ {use}"))


@pytest.mark.parametrize("use", ["attribute", "method", "subscript"])
def test_a_none_grad_used_as_an_object_is_reported_at_the_read(use):
    with pytest.raises((AttributeError, TypeError)):
        _train(check_none=False, use=use)  # plain PyTorch: 'NoneType' object has no attribute ...
    guard = GraphGuard(mode="collect")
    with pytest.raises((AttributeError, TypeError)):
        with guard:
            _train(check_none=False, use=use)
    got = [(f.code, f.subject.name, f.location.line, f.before_crash) for f in guard.findings]
    assert got == [("GG008", "scorer.weight", _read_line(use), True)], got


def test_raise_mode_stops_at_the_read_before_pythons_error():
    from graphguard import GraphMisuseError

    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard():
            _train(check_none=False, use="attribute")
    f = info.value.findings[0]
    assert (f.code, f.location.line, f.before_crash) == ("GG008", _read_line("attribute"), True)


def test_a_none_grad_passed_to_a_call_is_explained_after_the_fact():
    guard = GraphGuard(mode="collect")
    with pytest.raises((AttributeError, TypeError)):
        with guard:
            _train(check_none=False, use="argument")
    got = [(f.code, f.subject.name, f.location.line, f.before_crash) for f in guard.findings]
    assert got == [("GG008", "scorer.weight", _read_line("argument"), False)], got


def test_a_read_that_checks_for_none_is_quiet_at_the_read():
    guard = GraphGuard(mode="collect")
    with guard:
        _train(check_none=True)
    # the step still reports the parameters that never got a gradient, not the reads
    assert all(f.location.line != 0 for f in guard.findings)
    reads = {_read_line(use) for use in ("attribute", "method", "subscript", "argument")}
    assert not any(f.location.line in reads for f in guard.findings)
