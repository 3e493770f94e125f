"""Skimmed iterations (NOTE [skimmed iterations] in engine.py): in light mode the step-level rules
judge one window of iterations out of every SAMPLE_PERIOD. Silent misuse that starts late is still
reported within one period, with its names and lines; misuse PyTorch would crash on is still
reported before the crash in a skimmed iteration; correct long runs stay silent; and most light
iterations really are skimmed. Each buggy program is also run without the guard, to show that plain
PyTorch really misbehaves there. No test here measures time (benchmarks/overhead.py does).
"""
from __future__ import annotations


import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from graphguard import GraphGuard, GraphMisuseError
from lines import marker_lines
from graphguard.guard import SAMPLE_PERIOD
from graphguard.rules import ParamWithoutGrad



line_of = marker_lines(__file__)  # the line that ends with `# <marker>`


def small_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


# ---- zero_grad() dropped at iteration 200 ---------------------------------------------------------
def train_zero_grad_until_200(iterations: int = 260, trace: list | None = None) -> nn.Module:
    model = small_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for it in range(iterations):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        if it < 200:
            opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()  # ZG-BACKWARD
        if trace is not None and it == 201:
            # what the step is about to use, and the gradient of this batch alone
            fresh = torch.autograd.grad(F.mse_loss(model(x), y), list(model.parameters()))
            trace.append([(p.grad.clone(), g) for p, g in zip(model.parameters(), fresh)])
        opt.step()  # ZG-STEP
    return model


def test_plain_torch_steps_on_accumulated_gradients_after_200():
    trace: list = []
    train_zero_grad_until_200(trace=trace)
    (pairs,) = trace
    assert any(not torch.allclose(used, fresh) for used, fresh in pairs)


def test_zero_grad_dropped_at_200_is_reported_within_one_period():
    with GraphGuard(mode="collect") as guard:
        train_zero_grad_until_200()
    found = [f for f in guard.findings if f.code == "GG010"]
    assert len(found) == 1, [(f.code, f.subject.name) for f in guard.findings]
    f = found[0]
    assert (f.subject.name, f.location.line) == ("opt", line_of("ZG-STEP"))
    assert 201 <= f.iteration <= 201 + 2 * SAMPLE_PERIOD
    assert line_of("ZG-BACKWARD") in [r.location.line for r in f.related if r.location]


# ---- two optimizers; the critic's zero_grad() dropped at loop 150 -------------------------------
def train_two_optimizers(drop_from: int | None, loops: int = 200) -> None:
    gen, critic = small_model(1), small_model(2)
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(critic.parameters(), lr=1e-3)
    for it in range(loops):
        x = torch.randn(16, 4)
        fake = gen(x)
        if drop_from is None or it < drop_from:
            opt_d.zero_grad()
        d_loss = critic(torch.cat([x[:, :3], fake.detach()], 1)).mean()
        d_loss.backward()
        opt_d.step()  # CRITIC-STEP
        opt_g.zero_grad()
        g_loss = -critic(torch.cat([x[:, :3], fake], 1)).mean()
        g_loss.backward()
        opt_g.step()


def test_second_optimizer_missing_zero_grad_late_is_reported():
    with GraphGuard(mode="collect") as guard:
        train_two_optimizers(drop_from=150)
    found = [f for f in guard.findings if f.code == "GG010"]
    assert [(f.subject.name, f.location.line) for f in found] == [("opt_d", line_of("CRITIC-STEP"))]
    # two iterations per loop: within one period of windows of two optimizers
    assert 2 * 150 <= found[0].iteration <= 2 * 150 + 2 * 2 * SAMPLE_PERIOD + 2


def test_two_optimizers_with_detached_fakes_stay_silent():
    with GraphGuard(mode="collect") as guard:
        train_two_optimizers(drop_from=None)
    assert guard.findings == []


# ---- a parameter group added at iteration 200 that the loss never reaches ------------------------
def train_group_added_at_200(kept: list, iterations: int = 240) -> None:
    model = small_model()
    torch.manual_seed(1)
    extra = nn.Linear(8, 1)
    kept.append((extra, extra.weight.detach().clone()))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for it in range(iterations):
        if it == 200:
            opt.add_param_group({"params": extra.parameters()})
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()  # EXTRA-STEP


def test_plain_torch_never_trains_the_late_group():
    kept: list = []
    train_group_added_at_200(kept)
    ((extra, before),) = kept
    assert extra.weight.grad is None and torch.equal(extra.weight.detach(), before)


def test_late_unreached_group_is_reported_in_light_mode():
    with GraphGuard(mode="collect") as guard:
        train_group_added_at_200([])
    found = [(f.code, f.subject.name, f.location.line) for f in guard.findings]
    assert found == [("GG008", "extra", line_of("EXTRA-STEP"))]
    assert 200 <= guard.findings[0].iteration <= 200 + 2 * SAMPLE_PERIOD


# ---- misuse PyTorch crashes on, in a skimmed iteration --------------------------------------------
def train_stale_from(start: int, iterations: int) -> None:
    model = small_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x0 = torch.randn(16, 4)
    anchor = None
    for it in range(iterations):
        opt.zero_grad()
        loss = F.mse_loss(model(torch.randn(16, 4)), torch.randn(16, 1))
        if it >= start:
            if anchor is None:
                anchor = model(x0)  # STALE: kept with its graph
            loss = loss + (model(x0) - anchor).pow(2).mean()
        loss.backward()  # STALE-BACKWARD
        opt.step()


def test_plain_torch_crashes_on_the_stale_tensor():
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        train_stale_from(165, 170)


def test_stale_tensor_in_a_skimmed_iteration_is_reported_before_the_crash():
    # iteration 166: outside the sampled window of its period (166 % (2 * 8) = 6 >= 2)
    assert 166 % (2 * SAMPLE_PERIOD) >= 2
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard():
            train_stale_from(165, 170)
    (f,) = info.value.findings
    assert (f.code, f.subject.name, f.location.line, f.iteration) == (
        "GG001", "anchor", line_of("STALE-BACKWARD"), 166)
    assert f.before_crash is True


# ---- correct long runs stay silent; most light iterations are skimmed -----------------------------
def train_accumulating(steps: int = 120, micro: int = 4) -> None:
    model = small_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad(set_to_none=False)
        for _ in range(micro):
            (F.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1)) / micro).backward()
        opt.step()


def test_gradient_accumulation_over_a_long_run_stays_silent():
    with GraphGuard(mode="collect") as guard:
        train_accumulating()
    assert guard.findings == []


def test_most_light_iterations_are_skimmed():
    calls: list[int] = []
    with GraphGuard(mode="collect") as guard:
        (rule,) = [r for r in guard.engine.rules if isinstance(r, ParamWithoutGrad)]
        check = rule.check

        def counted(event, ctx):
            if type(event).__name__ == "StepCall":
                calls.append(ctx.iteration)
            return check(event, ctx)

        rule.check = counted
        train_accumulating(steps=160, micro=1)
    assert guard.findings == []
    light = [it for it in calls if it >= 2]
    # one window of 2 iterations per period of 2 * SAMPLE_PERIOD: about 1 step in SAMPLE_PERIOD
    assert 158 // SAMPLE_PERIOD - 4 <= len(light) <= 158 // SAMPLE_PERIOD + 4, light


# ---- marks kept by sequence number (NOTE [marks by sequence number] in capture/marks.py) -----------
def train_gan_interleaved(loops: int = 120) -> None:
    """The critic sees the real batch before the generator runs: the generator's nodes are made
    inside the window of the critic's backward, which never reaches them (fake.detach())."""
    gen, critic = small_model(1), small_model(2)
    opt_g = torch.optim.SGD(gen.parameters(), lr=1e-3)
    opt_d = torch.optim.SGD(critic.parameters(), lr=1e-3)
    for _ in range(loops):
        x = torch.randn(16, 4)
        opt_d.zero_grad()
        d_real = critic(x).mean()
        fake = torch.cat([x[:, :3], gen(x)], 1)
        d_loss = critic(fake.detach()).mean() - d_real
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        (-critic(fake).mean()).backward()
        opt_g.step()


def test_graph_made_inside_another_backwards_window_is_not_stale():
    with GraphGuard(mode="collect") as guard:
        train_gan_interleaved()
    assert guard.findings == []


def train_reused_loss(start: int, iterations: int) -> None:
    model = small_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = None
    for it in range(iterations):
        opt.zero_grad()
        loss = F.mse_loss(model(torch.randn(16, 4)), torch.randn(16, 1))
        if it == start:
            kept = loss  # KEPT: this iteration's loss, with its graph
        total = loss if kept is None or it == start else loss + kept
        total.backward()  # KEPT-BACKWARD
        opt.step()


def test_plain_torch_crashes_on_the_kept_loss():
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        train_reused_loss(100, 103)


def test_loss_kept_from_a_range_marked_backward_is_reported_before_the_crash():
    # the graph of iteration 100 was freed by a light-mode backward that kept its mark by range
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard():
            train_reused_loss(100, 103)
    (f,) = info.value.findings
    assert (f.code, f.subject.name, f.location.line, f.iteration) == (
        "GG001", "kept", line_of("KEPT-BACKWARD"), 101)
    assert f.before_crash is True


def test_sequence_marks_find_drop_and_stay_bounded():
    from graphguard.capture.marks import MAX_RANGES, SequenceMarks
    from graphguard.capture.state import Mark
    from graphguard.model import Frame

    site = (Frame("train.py", 12, "main"),)
    marks = SequenceMarks()
    first = Mark(0, 0, site, False)
    marks.add(10, 19, first)
    marks.add(25, 30, Mark(1, 1, site, False))
    assert marks.find(9) is None and marks.find(20) is None and marks.find(31) is None
    assert marks.find(10) == first and marks.find(19) == first
    assert marks.find(27).iteration == 1
    marks.add(28, 40, Mark(2, 2, site, False))  # overlaps the last range: ignored
    assert marks.find(35) is None
    last = Mark(3, 3, site, False)
    marks.add(50, 60, last)
    marks.drop(last)  # its backward raised: taken back
    assert marks.find(55) is None and len(marks) == 2
    for k in range(3 * MAX_RANGES):
        marks.add(100 + 10 * k, 105 + 10 * k, Mark(k, k, site, False))
    assert len(marks) <= MAX_RANGES
    assert marks.find(100 + 10 * (3 * MAX_RANGES - 1)).iteration == 3 * MAX_RANGES - 1
