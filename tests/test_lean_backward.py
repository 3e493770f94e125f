"""Lean backwards (NOTE [lean backwards] in backward_check.py): in a skimmed iteration a plain
`loss.backward()` whose graph is fresh, intact and of a shape already judged is checked by one
walk and leaves its marks, with no event built. These tests show that the lean path is really
taken in a clean steady state, that everything unusual still goes the full way (and is
reported exactly as before), and that a backward that raises on the lean path is explained
and leaves no mark behind. No test here measures time (benchmarks/overhead.py does).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import graphguard.backward_check as backward_module
from graphguard import GraphGuard, GraphMisuseError
from lines import marker_lines

line_of = marker_lines(__file__)


class LeanSpy:
    """Counts lean walks and how many of them let the lean path go on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.walks = self.lean = 0
        real = backward_module.lean_scan

        def spy(*args, **kwargs):
            got = real(*args, **kwargs)
            self.walks += 1
            self.lean += got is not None
            return got

        monkeypatch.setattr(backward_module, "lean_scan", spy)


def model_and_opt() -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def clean_loop(model: nn.Module, opt: torch.optim.Optimizer, iterations: int) -> None:
    torch.manual_seed(1)
    for _ in range(iterations):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()


def test_a_clean_steady_state_takes_the_lean_path(monkeypatch):
    spy = LeanSpy(monkeypatch)
    model, opt = model_and_opt()
    with GraphGuard() as guard:
        clean_loop(model, opt, 200)
    assert guard.findings == []
    # every skimmed iteration after the first judged windows: 7 windows of 8 are skimmed
    assert spy.lean == spy.walks
    assert spy.lean >= 150


def test_the_lean_path_changes_nothing_that_training_computes():
    model_a, opt_a = model_and_opt()
    clean_loop(model_a, opt_a, 120)
    model_b, opt_b = model_and_opt()
    with GraphGuard():
        clean_loop(model_b, opt_b, 120)
    for a, b in zip(model_a.parameters(), model_b.parameters()):
        assert torch.equal(a, b)


def test_retained_graphs_take_the_full_path(monkeypatch):
    spy = LeanSpy(monkeypatch)
    model, opt = model_and_opt()
    torch.manual_seed(1)
    with GraphGuard() as guard:
        for _ in range(100):
            x, y = torch.randn(16, 4), torch.randn(16, 1)
            opt.zero_grad()
            out = model(x)
            F.mse_loss(out, y).backward(retain_graph=True)  # two losses on one graph
            out.pow(2).mean().backward()
            opt.step()
    assert guard.findings == []
    # the first keeps its graph (never lean); the second runs through nodes the first one
    # traversed, so neither is quiet and every iteration is judged in full
    assert spy.lean == 0


# ---- a backward that raises on the lean path -----------------------------------------------------
def train_with_failing_hook(iterations: int = 120, fail_at: int = 100) -> None:
    model, opt = model_and_opt()
    torch.manual_seed(1)
    for it in range(iterations):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        opt.zero_grad()
        hidden = model[1](model[0](x))
        if it == fail_at:
            hidden.register_hook(failing_hook)
        loss = F.mse_loss(model[2](hidden), y)
        loss.backward()  # FAILING-BACKWARD
        opt.step()


def test_plain_torch_raises_in_the_hook():
    with pytest.raises(RuntimeError, match="on purpose"):
        train_with_failing_hook()


@pytest.mark.parametrize("record_iterations", [2, None], ids=["lean", "recorded"])
def test_a_lean_backward_that_raises_is_explained_as_a_recorded_one(record_iterations):
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard(record_iterations=record_iterations):
            train_with_failing_hook()
    (f,) = info.value.findings
    assert f.code == "GG903"
    assert f.location.line == line_of("FAILING-BACKWARD")
    assert isinstance(info.value.__context__, RuntimeError)  # raised while PyTorch's error was handled


def failing_hook(grad: torch.Tensor) -> torch.Tensor:
    raise RuntimeError("a gradient hook failed on purpose")


def test_a_lean_backward_that_raises_leaves_no_mark(monkeypatch):
    spy = LeanSpy(monkeypatch)
    model, opt = model_and_opt()
    torch.manual_seed(1)
    with GraphGuard(mode="collect") as guard:
        for it in range(160):
            x, y = torch.randn(16, 4), torch.randn(16, 1)
            opt.zero_grad()
            hidden = model[1](model[0](x))
            if it == 100:
                hidden.register_hook(failing_hook)
            loss = F.mse_loss(model[2](hidden), y)
            try:
                loss.backward()
            except RuntimeError:
                continue  # the program goes on with the next batch
            opt.step()
    assert [f.code for f in guard.findings] == ["GG903"]
    # lean until the failure (then recording is re-armed to name what failed: NOTE [skimmed iterations])
    assert spy.lean > 50
