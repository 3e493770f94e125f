"""GG010, GG011, GG012, GG101, GG102 beyond the case files: the related lines they name, raise
mode stopping before any damage, detection after the guard went light, and no finding twice."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from casekit import CASES, load_case, run_guarded
from graphguard import GraphGuard, GraphMisuseError
from graphguard.guard import SAMPLE_PERIOD

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
THIS = Path(__file__).resolve()


def line_of(path: Path, needle: str) -> int:
    hits = [i for i, text in enumerate(path.read_text().splitlines(True), 1) if needle in text]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def only(guard: GraphGuard, code: str):
    found = [f for f in guard.findings if f.code == code]
    assert len(found) == 1, [(f.code, f.subject.name) for f in guard.findings]
    return found[0]


def related(finding, role: str) -> int:
    (r,) = [r for r in finding.related if r.role == role]
    return r.location.line


# ---- the lines each finding points at ------------------------------------------------------------

def test_gg010_names_the_earlier_step_and_the_accumulating_backward():
    path = CASES / "gg010_classifier_loop.py"
    guard, _ = run_guarded(load_case(path).buggy)
    f = only(guard, "GG010")
    assert f.subject.kind == "optimizer"
    assert related(f, "stepped-at") == line_of(path, "opt.step()  # expect")
    assert related(f, "accumulated-by") == line_of(path, " loss.backward()")


def test_gg011_names_where_the_layer_is_built():
    path = CASES / "gg011_layer_in_forward.py"
    guard, _ = run_guarded(load_case(path).buggy)
    f = only(guard, "GG011")
    assert f.subject.created_at.line == line_of(path, "        head = nn.Linear(16, 1)\n")
    path = CASES / "gg011_plain_list.py"
    guard, _ = run_guarded(load_case(path).buggy)
    assert only(guard, "GG011").subject.created_at.line == line_of(path, "self.blocks = nn.ModuleList")


def test_gg101_names_where_the_holder_starts():
    path = CASES / "gg101_total_loss.py"
    guard, _ = run_guarded(load_case(path).buggy)
    f = only(guard, "GG101")
    assert f.subject.created_at.code == "total_loss = 0"
    assert f.location.line == line_of(path, "total_loss += loss  #")


def test_gg102_names_the_cause_and_the_earlier_retained_backward():
    path = CASES / "gg102_frozen_anchor.py"
    guard, _ = run_guarded(load_case(path).buggy)
    f = only(guard, "GG102")
    assert related(f, "cause") == line_of(path, "anchor = encoder(prompt)  # computed once")
    assert related(f, "retained-by") == f.location.line


# ---- raise mode: before the damage -----------------------------------------------------------------

def _classifier():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def test_gg010_raises_before_the_second_step_changes_anything():
    model, opt = _classifier()
    x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard():
            for _ in range(3):
                F.cross_entropy(model(x), y).backward()
                before = [p.detach().clone() for p in model.parameters()]
                opt.step()
    assert [f.code for f in info.value.findings] == ["GG010"]
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_gg012_raises_instead_of_pytorchs_error():
    model, _ = _classifier()
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard():
            per_sample = F.cross_entropy(model(torch.randn(3, 4)), torch.tensor([0, 1, 1]), reduction="none")
            per_sample.backward()
    assert info.value.findings[0].subject.name == "per_sample"
    assert all(p.grad is None for p in model.parameters())  # before any gradient was written


# ---- after the guard went light (record_iterations=2) ------------------------------------------------

def test_gg010_after_many_correct_iterations():
    model, opt = _classifier()
    with GraphGuard(mode="collect") as guard:
        for i in range(40):
            if i < 30:  # the reset goes missing late in the run
                opt.zero_grad()
            F.cross_entropy(model(torch.randn(8, 4)), torch.randint(0, 2, (8,))).backward()
            opt.step()
    (f,) = guard.findings
    # the first step on a sum is 30; in light mode the step-level rules judge one window of two
    # iterations per period (NOTE [skimmed iterations]): reported at the next window's second step
    assert f.code == "GG010" and 30 <= f.iteration <= 30 + 2 * SAMPLE_PERIOD


def test_gg101_leak_that_starts_in_light_mode_is_seen_soon():
    model, opt = _classifier()
    with GraphGuard(mode="collect") as guard:
        history = []
        for i in range(60):
            opt.zero_grad()
            loss = F.cross_entropy(model(torch.randn(8, 4)), torch.randint(0, 2, (8,)))
            loss.backward()
            opt.step()
            if i >= 20:
                history.append(loss)
    (f,) = guard.findings
    assert (f.code, f.subject.name) == ("GG101", "history")
    assert f.iteration <= 36  # the look at 32, then follow-ups


# ---- each problem once ------------------------------------------------------------------------------

def test_one_leak_seen_through_two_names_is_reported_once():
    model, opt = _classifier()
    with GraphGuard(mode="collect") as guard:
        total = 0
        for i in range(12):
            opt.zero_grad()
            loss = F.cross_entropy(model(torch.randn(8, 4)), torch.randint(0, 2, (8,)))
            loss.backward()
            opt.step()
            total = total + loss
            mean = total / (i + 1)  # the same graphs again
    assert [(f.code, f.subject.name) for f in guard.findings] == [("GG101", "total")]
    assert mean.grad_fn is not None
