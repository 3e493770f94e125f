"""Misuse that first appears late, long after the guard went light (its steady state: no function
mode, no saved-tensor hooks, backward and step checks only), is still reported before PyTorch
raises, with the names and lines of the program; and a long clean run keeps the guard's memory
flat. Each program is also run without the guard, to show that plain PyTorch really fails there.

No test here measures time (benchmarks/overhead.py does).
"""
from __future__ import annotations

import gc

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from graphguard import GraphGuard, GraphMisuseError
from lines import marker_lines



line_of = marker_lines(__file__)  # the line that ends with `# <marker>`


def small_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


# ---- a stale tensor introduced at iteration 200 ---------------------------------------------------
def train_stale_from_200(models: list, iterations: int = 230) -> None:
    model = small_model()
    models.append(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x0 = torch.randn(16, 4)
    anchor = None
    for it in range(iterations):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        if it >= 200:
            if anchor is None:
                anchor = model(x0)  # ANCHOR: kept with its graph, used again next iteration
            loss = loss + 0.1 * (model(x0) - anchor).pow(2).mean()
        loss.backward()  # ANCHOR-BACKWARD
        opt.step()


def test_plain_torch_fails_on_the_stale_tensor():
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        train_stale_from_200([])


def test_stale_tensor_from_iteration_200_is_reported_before_the_crash():
    models: list = []
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard() as guard:
            train_stale_from_200(models)
    (f,) = info.value.findings
    assert (f.code, f.subject.name, f.location.line) == ("GG001", "anchor", line_of("ANCHOR-BACKWARD"))
    assert f.before_crash is True
    assert f.iteration == 201
    # raised before PyTorch ran: zero_grad() had set every .grad to None, and it still is
    assert all(p.grad is None for p in models[0].parameters())


# ---- an in-place change of a saved tensor, in a branch first taken at iteration 300 --------------
def train_inplace_output_from_300(models: list, iterations: int = 310) -> None:
    model = small_model()
    models.append(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for it in range(iterations):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        opt.zero_grad()
        gate = torch.sigmoid(model(x))  # sigmoid saves its output for the backward
        if it == 300:
            gate.mul_(0.5)  # GATE-INPLACE: a rarely taken branch halves it in place
        loss = F.mse_loss(gate, y)
        loss.backward()  # GATE-BACKWARD
        opt.step()


def train_inplace_input_from_300(iterations: int = 310) -> torch.Tensor:
    """The changed tensor is plain data (it needs no grad): the graph has the same shape as on
    every other iteration, only the saved value's version differs."""
    torch.manual_seed(0)
    w = torch.randn(8, 1, requires_grad=True)
    opt = torch.optim.Adam([w], lr=1e-3)
    for it in range(iterations):
        features = torch.randn(16, 8)
        opt.zero_grad()
        pred = torch.tanh(features @ w)  # mm saves `features` for w's gradient
        if it == 300:
            features.clamp_(-1.0, 1.0)  # FEATURES-INPLACE
        loss = pred.pow(2).mean()
        loss.backward()  # FEATURES-BACKWARD
        opt.step()
    return w


@pytest.mark.parametrize("program", ["output", "input"])
def test_plain_torch_fails_on_the_inplace_change(program):
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        if program == "output":
            train_inplace_output_from_300([])
        else:
            train_inplace_input_from_300()


def test_inplace_change_of_a_saved_output_at_iteration_300_is_reported_before_the_crash():
    models: list = []
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard() as guard:
            train_inplace_output_from_300(models)
    (f,) = info.value.findings
    assert (f.code, f.subject.name, f.location.line) == ("GG005", "gate", line_of("GATE-BACKWARD"))
    assert f.before_crash is True
    assert f.iteration == 300
    assert guard.rec.recording is True  # the error re-armed recording, for the details next time
    assert all(p.grad is None for p in models[0].parameters())


def test_inplace_change_of_saved_data_at_iteration_300_is_reported_before_the_crash():
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard():
            train_inplace_input_from_300()
    (f,) = info.value.findings
    assert (f.code, f.subject.name, f.location.line) == ("GG005", "features",
                                                         line_of("FEATURES-BACKWARD"))
    assert f.before_crash is True
    assert f.iteration == 300


def test_inplace_change_in_collect_mode_still_fails_like_pytorch():
    """Without the hooks, PyTorch's own check is back: in collect mode the finding is kept and
    the backward still raises (never a silent wrong gradient)."""
    with GraphGuard(mode="collect") as guard:
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            train_inplace_input_from_300()
    assert [(f.code, f.subject.name, f.before_crash) for f in guard.findings] == [
        ("GG005", "features", True)]


# ---- a non-detached target in an evaluation branch first taken late -------------------------------
def train_with_late_consistency_eval(models: list, iterations: int = 260) -> None:
    model = small_model()
    models.append(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x_val = torch.randn(16, 4)
    for it in range(iterations):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        opt.zero_grad()
        out = model(x)
        loss = F.mse_loss(out, y)
        loss.backward()
        opt.step()
        if it > 0 and it % 250 == 0:
            # evaluation branch: a consistency loss against this step's output, not detached
            reference = out  # REFERENCE
            opt.zero_grad()
            consistency = F.mse_loss(model(x_val), reference)
            consistency.backward()  # CONSISTENCY-BACKWARD


def test_plain_torch_fails_on_the_non_detached_target():
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        train_with_late_consistency_eval([])


def test_non_detached_target_in_a_late_eval_branch_is_reported_before_the_crash():
    models: list = []
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard():
            train_with_late_consistency_eval(models)
    (f,) = info.value.findings
    # the backward runs into the training graph that `loss.backward()` freed before the step that
    # ended the iteration: `out`, which the evaluation branch passed as the target under the name
    # `reference` (either name is it). An earlier iteration's graph, GG001, as while recording:
    # the skimmed step in between is on the guard's trail of steps
    assert (f.code, f.location.line) == ("GG001", line_of("CONSISTENCY-BACKWARD"))
    assert f.subject.name in ("out", "reference")
    assert f.before_crash is True
    assert f.iteration == 251
    assert all(p.grad is None for p in models[0].parameters())


# ---- the same loss backwarded again after a step, first at iteration 203 -------------------------
def train_backward_after_step(models: list, start: int = 203) -> None:
    """A skimmed iteration's step lies between the two backwards: the step that begins a new
    training step is known from the guard's trail of every step, not only the judged ones."""
    model = small_model()
    models.append(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for it in range(start + 3):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if it >= start:
            opt.zero_grad()
            # last iteration's graph, after the step
            loss.backward()  # AGAIN-BACKWARD
            opt.step()


def test_plain_torch_fails_on_the_backward_after_the_step():
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        train_backward_after_step([])


@pytest.mark.parametrize("start", [203, 204, 205, 206])
def test_backward_after_a_step_in_light_mode_is_the_stale_graph(start):
    """Wherever the late backward falls (skimmed or sampled window), it is GG001 at its line, as
    while recording: the graph of the iteration the step ended, not a second loss of one step."""
    models: list = []
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard():
            train_backward_after_step(models, start)
    (f,) = info.value.findings
    assert (f.code, f.subject.name, f.location.line) == ("GG001", "loss", line_of("AGAIN-BACKWARD"))
    assert f.before_crash is True
    assert f.iteration == start + 1
    # raised before PyTorch ran: zero_grad() had set every .grad to None, and it still is
    assert all(p.grad is None for p in models[0].parameters())


# ---- memory stays flat over 1,000 iterations ---------------------------------------------------------
def _live_tensors() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, torch.Tensor))


def _tracked(guard: GraphGuard) -> int:
    """Everything the guard's recorder and rules hold in containers (records, not bytes)."""
    n = 0
    for owner in [guard.rec, guard.engine, *guard.engine.rules]:
        for value in vars(owner).values():
            if isinstance(value, (dict, list, set, frozenset, tuple)) or hasattr(value, "__len__"):
                try:
                    n += len(value)
                except TypeError:
                    pass
    return n


def test_memory_stays_flat_over_1000_iterations():
    model = small_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    lstm = nn.LSTMCell(4, 4)
    opt2 = torch.optim.SGD(lstm.parameters(), lr=0.01)
    seen: dict[int, tuple[int, int]] = {}
    with GraphGuard() as guard:
        for it in range(1000):
            x, y = torch.randn(16, 4), torch.randn(16, 1)
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
            h = c = torch.zeros(2, 4)
            for _ in range(3):
                h, c = lstm(torch.randn(2, 4), (h, c))
            opt2.zero_grad()
            h.pow(2).mean().backward()
            opt2.step()
            if it in (99, 999):
                seen[it] = (_live_tensors(), _tracked(guard))
    assert guard.findings == []
    assert seen[999][0] == seen[99][0]  # no tensor (or graph behind one) kept alive
    assert seen[999][1] <= seen[99][1] + 8  # the guard's records do not grow with iterations
