"""GG005 and the saved-tensor hooks: installing them switches PyTorch's own version check off, so
the guard must (1) still make a changed saved tensor fail the backward in every mode, never give a
silently wrong gradient, and (2) leave legitimate in-place code bit-identical."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from graphguard import GraphGuard, GraphMisuseError

INPLACE_ERROR = "modified by an inplace operation"


def _saved_then_changed() -> tuple[torch.Tensor, torch.Tensor]:
    w = torch.randn(5, requires_grad=True)
    h = torch.sigmoid(w * 2)  # sigmoid saves its output
    h.mul_(0.5)  # ... which is changed here
    return w, h


@pytest.mark.parametrize("mode", ["warn", "collect"])
def test_changed_saved_tensor_still_fails_backward(mode):
    guard = GraphGuard(mode=mode)
    with pytest.warns() if mode == "warn" else _nothing():
        with pytest.raises(RuntimeError, match=INPLACE_ERROR):
            with guard:
                torch.manual_seed(0)
                w, h = _saved_then_changed()
                h.sum().backward()
    codes = [f.code for f in guard.findings if f.severity == "error"]
    assert codes == ["GG005"]
    assert guard.findings[0].before_crash
    assert w.grad is None  # nothing was accumulated from a wrong saved value


def test_raise_mode_stops_before_backward():
    with pytest.raises(GraphMisuseError) as info:
        with GraphGuard():
            torch.manual_seed(0)
            w, h = _saved_then_changed()
            h.sum().backward()
    assert [f.code for f in info.value.findings] == ["GG005"]
    assert w.grad is None


def test_plain_torch_agrees():
    torch.manual_seed(0)
    w, h = _saved_then_changed()
    with pytest.raises(RuntimeError, match=INPLACE_ERROR):
        h.sum().backward()


class _Net(nn.Module):
    """In-place ops PyTorch accepts: none of them writes into a tensor an op saved."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.fc1 = nn.Linear(3 * 6 * 6, 16)
        self.act = nn.ReLU(inplace=True)
        self.drop = nn.Dropout(0.3, inplace=True)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn(self.conv(x))
        out += x.repeat(1, 2, 1, 1)[:, :3]  # residual into batch norm's output
        out = F.relu(out, inplace=True)
        h = self.drop(self.fc1(out.flatten(1)))  # dropout in place on a linear's output
        h = self.act(h)
        z = self.fc2(h) * 1.0
        z.sigmoid_()  # in-place op whose own saved output is the new value
        return z


def _train(steps: int, guard: GraphGuard | None) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = _Net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    grads: list[torch.Tensor] = []

    def loop() -> None:
        for _ in range(steps):
            x = torch.randn(4, 2, 6, 6)
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            grads.extend(p.grad.clone() for p in model.parameters())
            opt.step()

    if guard is None:
        loop()
    else:
        with guard:
            loop()
    return grads + [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("mode", ["raise", "warn", "collect"])
def test_legitimate_inplace_is_bit_identical(mode):
    plain = _train(4, None)  # 4 steps: past the guard's two fully recorded iterations
    guard = GraphGuard(mode=mode)
    guarded = _train(4, guard)
    assert len(plain) == len(guarded)
    assert all(torch.equal(a, b) for a, b in zip(plain, guarded))
    assert [f.code for f in guard.findings if f.code == "GG005"] == []


def test_unrelated_changed_graph_is_not_reported_and_gradients_match():
    """A live graph whose saved weights an optimizer step changed (an evaluation forward kept
    without no_grad) makes the check read every saved value of the next graph; that reading must
    neither report it nor change the gradients."""

    def run(guard: GraphGuard | None) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(6, 3)
        out: list[torch.Tensor] = []

        def loop() -> None:
            kept = model(x)  # evaluation output, graph kept alive on purpose
            for _ in range(3):
                opt.zero_grad()
                model(x).pow(2).mean().backward()
                out.extend(p.grad.clone() for p in model.parameters())
                opt.step()  # changes weights that `kept` saved
                if guard is not None:
                    changed.append(len(guard.rec.modified_packs()))
            assert kept.requires_grad

        if guard is None:
            loop()
        else:
            with guard:
                loop()
        return out

    changed: list[int] = []
    guard = GraphGuard(mode="collect")
    assert all(torch.equal(a, b) for a, b in zip(run(None), run(guard)))
    assert guard.findings == []
    assert changed and all(changed)  # the check really had changed saved tensors to look for


def test_retained_graph_then_step_stays_quiet():
    """Two losses on one forward with retain_graph, both backward before the step: legitimate."""
    with GraphGuard(mode="collect") as guard:
        torch.manual_seed(0)
        model = nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            out = torch.tanh(model(torch.randn(5, 4)))
            opt.zero_grad()
            out.pow(2).mean().backward(retain_graph=True)
            out.abs().mean().backward()
            opt.step()
    assert guard.findings == []


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False
