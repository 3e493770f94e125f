"""Light mode keeps detecting: after `record_iterations` the guard stops intercepting ops, but the
checks at backward and step still run, a stale graph that first appears late is still reported
before PyTorch's crash, and the error switches full recording back on so that the next occurrence
names the line that made the stale tensor.

No test here measures time (benchmarks/overhead.py does).
"""
from __future__ import annotations


import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from graphguard import GraphGuard, GraphMisuseError
from lines import marker_lines



line_of = marker_lines(__file__)  # the line that ends with `# <marker>`


def function_stack_depth() -> int:
    return torch._C._len_torch_function_stack()


# ---- a reference tensor rebuilt with history from iteration 10 on ---------------------------------
def train_with_late_baseline(iterations: int = 15, models: list | None = None) -> None:
    """Fine for ten iterations; at iteration 10 a reference output is kept with its graph."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    if models is not None:
        models.append(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x0 = torch.randn(16, 4)
    baseline = None
    for it in range(iterations):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        if it == 10:
            baseline = model(x0)  # BASELINE
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        if baseline is not None:
            loss = loss + (model(x0) - baseline).pow(2).mean()
        loss.backward()  # BASELINE-BACKWARD
        opt.step()


def test_stale_graph_first_at_iteration_10_is_reported_before_the_crash():
    models: list = []
    guard = GraphGuard()
    with pytest.raises(GraphMisuseError) as info:
        with guard:
            train_with_late_baseline(models=models)
    (f,) = info.value.findings
    assert (f.code, f.subject.name, f.location.line) == ("GG001", "baseline",
                                                          line_of("BASELINE-BACKWARD"))
    assert f.before_crash is True
    assert f.iteration == 11
    # raised before PyTorch ran: zero_grad() had set every .grad to None, and it still is
    assert all(p.grad is None for p in models[0].parameters())


def test_light_mode_was_on_when_the_misuse_began():
    """The misuse above is found in light mode: the mode had left the stack by then."""
    depths: list[int] = []
    guard = GraphGuard(mode="collect")
    orig = guard._end_iteration

    def spy(*args, **kwargs):
        orig(*args, **kwargs)
        depths.append(function_stack_depth())

    guard._end_iteration = spy
    with guard:
        with pytest.raises(RuntimeError):  # collect mode: PyTorch's own error follows
            train_with_late_baseline()
    assert depths[1:10] == [0] * 9  # light from the second iteration's end on
    assert [f.code for f in guard.findings] == ["GG001"]
    assert guard.findings[0].before_crash is True


def test_after_rearming_the_next_occurrence_names_the_line():
    """A sweep that catches the error and starts the next trial: the first report (light mode)
    cannot name the line that made `baseline`; the error switches recording back on, and the same
    misuse in the next trial is reported again, now with that line."""
    guard = GraphGuard()
    raised = []
    with guard:
        for trial in range(2):
            try:
                train_with_late_baseline()
            except GraphMisuseError as err:
                raised.append(err.findings[0])
    assert len(raised) == 2
    first, second = raised
    assert (first.code, first.subject.name, first.location.line) == (
        "GG001", "baseline", line_of("BASELINE-BACKWARD"))
    assert (second.code, second.subject.name, second.location.line) == (
        "GG001", "baseline", line_of("BASELINE-BACKWARD"))
    assert second.subject.created_at is not None
    assert second.subject.created_at.line == line_of("BASELINE")
    # the report keeps one finding, the detailed one
    assert [(f.code, f.subject.created_at.line) for f in guard.findings] == [("GG001", line_of("BASELINE"))]


def test_recording_goes_light_again_once_the_details_are_in():
    guard = GraphGuard()
    with guard:
        for trial in range(2):
            try:
                train_with_late_baseline()
            except GraphMisuseError:
                pass
        assert guard.rec.recording is True  # rearmed by the second report (an error)
        train_ok = nn.Linear(3, 1)
        opt = torch.optim.SGD(train_ok.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            train_ok(torch.randn(4, 3)).sum().backward()
            opt.step()
        assert guard.rec.recording is False
        assert function_stack_depth() == 0


# ---- an RNN hidden state that stops being detached at iteration 10 --------------------------------
def train_rnn_late_carry(iterations: int = 14) -> None:
    torch.manual_seed(0)
    rnn = nn.RNN(3, 5, batch_first=True)
    head = nn.Linear(5, 1)
    opt = torch.optim.Adam([*rnn.parameters(), *head.parameters()], lr=1e-3)
    hidden = torch.zeros(1, 2, 5)
    for it in range(iterations):
        x, y = torch.randn(2, 4, 3), torch.randn(2, 4, 1)
        if it < 10:
            hidden = hidden.detach()
        out, hidden = rnn(x, hidden)  # CARRY
        loss = F.mse_loss(head(out), y)
        opt.zero_grad()
        loss.backward()  # CARRY-BACKWARD
        opt.step()


def test_carried_state_first_at_iteration_10_is_reported_before_the_crash():
    guard = GraphGuard()
    with pytest.raises(GraphMisuseError) as info:
        with guard:
            train_rnn_late_carry()
    (f,) = info.value.findings
    assert f.code in ("GG001", "GG004")
    assert f.location.line == line_of("CARRY-BACKWARD")
    assert f.before_crash is True
    assert f.iteration == 10


def test_carried_state_after_rearming_is_named_as_gg004():
    guard = GraphGuard()
    raised = []
    with guard:
        for trial in range(2):
            try:
                train_rnn_late_carry()
            except GraphMisuseError as err:
                raised.append(err.findings[0])
    second = raised[-1]
    assert (second.code, second.subject.name, second.location.line) == (
        "GG004", "hidden", line_of("CARRY-BACKWARD"))
    assert second.subject.created_at.line == line_of("CARRY")


# ---- other checks that light mode keeps ------------------------------------------------------------
def test_saved_tensor_modified_in_light_mode_is_still_caught():
    """Installing saved-tensor hooks switches PyTorch's own version check off; the guard's hooks
    do it instead, in light mode too: GG005 before the backward, and the backward still raises
    (never a silent wrong gradient)."""
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    with GraphGuard(mode="collect") as guard:
        for it in range(12):
            x = torch.randn(3)
            h = torch.sigmoid(w * x)  # sigmoid saves its output
            if it == 10:
                assert guard.rec.recording is False
                h.mul_(2.0)
                with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                    h.sum().backward()
                break
            opt.zero_grad()
            h.sum().backward()
            opt.step()
    assert [(f.code, f.before_crash) for f in guard.findings] == [("GG005", True)]
    assert guard.findings[0].iteration == 10


def test_light_mode_is_quiet_on_correct_training():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with GraphGuard() as guard:
        for it in range(30):
            x, y = torch.randn(8, 4), torch.randn(8, 1)
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            if it == 1:
                assert function_stack_depth() == 0
    assert guard.findings == []
    assert guard.rec.recording is False
