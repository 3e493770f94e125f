"""GG101's looks pass over every object the collector tracks: past the first iterations they are
spaced by what they cost (COST_RATIO), so that a loop of tiny steps does not pay a look every
512 steps. Only when a look happens moves, never what a look decides."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import graphguard.rules.gg101_graph_leak as gg101
from graphguard import GraphGuard

START = 20  # the iteration from which the loop keeps every loss's graph
STEPS = 200


def _late_leak() -> list:
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = []
    for step in range(STEPS):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= START:
            kept.append(loss)  # keeps each graph from iteration START on
    return kept


def _gg101_iterations(ratio: float, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    monkeypatch.setattr(gg101, "COST_RATIO", ratio)
    with GraphGuard(mode="collect") as g:
        kept = _late_leak()
    assert all(t.grad_fn is not None for t in kept)  # plain autograd really kept them
    return [f.iteration for f in g.findings if f.code == "GG101"]


def test_a_late_leak_is_found_at_a_due_look_when_looks_are_cheap(monkeypatch):
    # looks at 32, 64, ... (and follow-ups): the pile from iteration 20 is told by 64
    found = _gg101_iterations(0.0, monkeypatch)
    assert found and min(found) <= 64


def test_a_look_waits_while_it_would_cost_too_much(monkeypatch):
    # every due look after the sixteenth iteration waits (a huge ratio): nothing is told during the
    # loop (the exit's one look alone cannot date graphs made while nothing was recorded)
    assert [i for i in _gg101_iterations(1e12, monkeypatch) if i < STEPS - 1] == []
