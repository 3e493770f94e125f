"""GG101's looks without a pass over the whole heap at each: capture/kept.KeptWatch reads the
collector's young generations and the tensors its collector callback noted on their way to the
old generation; a pass over the whole heap comes first, then rarely, spaced by its cost."""
from __future__ import annotations

import gc

import pytest
import torch
import torch.nn as nn

from graphguard import GraphGuard
from graphguard.capture.kept import KeptWatch

START = 20  # the iteration from which the loop keeps every loss's graph
STEPS = 80


def _ids(ts: list[torch.Tensor]) -> set[int]:
    return {id(t) for t in ts}


@pytest.fixture
def watch():
    w = KeptWatch()
    w.install()
    yield w
    w.remove()


def test_a_value_promoted_between_looks_is_still_found(watch):
    w = torch.ones(3, requires_grad=True)
    watch.live()  # the first look: the whole heap
    kept = w * 2
    gc.collect()  # a full collection: `kept` leaves the young generations
    assert id(kept) not in _ids([t for g in (0, 1) for t in gc.get_objects(generation=g)
                                 if isinstance(t, torch.Tensor)])
    assert id(kept) in _ids(watch.live())
    assert watch.whole_passes == 1  # found by the cheap look, through the callback's note


def test_without_the_callback_a_promoted_value_is_missed(watch):
    # the control: the young generations alone lose a value a collection just promoted
    watch.live()
    watch.remove()
    watch.on, watch.whole_passes = True, 1  # looks as if watching, but nothing is noted
    kept = torch.ones(3, requires_grad=True) * 2
    gc.collect()
    assert id(kept) not in _ids(watch.live())


def test_whole_passes_wait_while_they_would_cost_too_much(watch, monkeypatch):
    monkeypatch.setattr(KeptWatch, "COST_RATIO", 1e12)
    for _ in range(3 * KeptWatch.WHOLE_EVERY):
        watch.live()
    assert watch.whole_passes == 1


def test_an_old_tensor_given_history_in_place_is_found_by_a_later_whole_pass(watch, monkeypatch):
    monkeypatch.setattr(KeptWatch, "COST_RATIO", 0.0)
    total = torch.zeros(())
    gc.collect()
    watch.live()
    total += (torch.ones((), requires_grad=True) * 2)  # old, and only now with history
    found = [id(total) in _ids(watch.live()) for _ in range(KeptWatch.WHOLE_EVERY + 1)]
    assert found[-1] and not found[0]  # missed by the cheap looks, found by the whole pass
    assert watch.whole_passes == 2


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
        if step % 10 == 0:
            gc.collect()  # the kept losses leave the young generations
    return kept


def test_a_late_leak_promoted_by_the_collector_is_found_at_a_due_look():
    with GraphGuard(mode="collect") as g:
        kept = _late_leak()
    assert all(t.grad_fn is not None for t in kept)  # plain autograd really kept the graphs
    found = [f for f in g.findings if f.code == "GG101"]
    assert [f.subject.name for f in found] == ["kept"]
    assert found[0].iteration <= 36  # the look at 32, then follow-ups
