"""GG011 and parameter groups added mid-training (staged unfreezing, as Lightning's
BaseFinetuning does): a parameter the late add_param_group passed over is a selection (info),
one unfrozen with no group added at all is left out (error); a complete unfreeze is silent."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from graphguard import GraphGuard


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
        nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 1))


def _batches(n: int = 6):
    g = torch.Generator().manual_seed(1)
    for _ in range(n):
        x = torch.randn(4, 3, 6, 6, generator=g)
        yield x, (x.mean(dim=(1, 2, 3)) > 0).float().unsqueeze(1)


def _train(unfreeze) -> GraphGuard:
    """Train the head, freeze the convolutions and norms, and call `unfreeze(model, opt)` after
    two steps."""
    with GraphGuard(mode="collect") as guard:
        model = _model()
        for p in model[:6].parameters():
            p.requires_grad = False
        opt = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)
        for i, (x, y) in enumerate(_batches()):
            if i == 2:
                unfreeze(model, opt)
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return guard


def _no_bn(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for p in model[3:6].parameters():
        p.requires_grad = True  # unfreezes the norm too, like BaseFinetuning.make_trainable
    opt.add_param_group({"params": [p for m in model[3:6] if not isinstance(m, nn.BatchNorm2d)
                                    for p in m.parameters()], "lr": 1e-4})


def _all(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for p in model[3:6].parameters():
        p.requires_grad = True
    opt.add_param_group({"params": list(model[3:6].parameters()), "lr": 1e-4})


def _forgotten(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    for p in model[:3].parameters():
        p.requires_grad = True
    opt.add_param_group({"params": list(model[:3].parameters()), "lr": 1e-4})
    for p in model[3:6].parameters():
        p.requires_grad = True  # unfrozen after the group was added, and never given to it


def serious(guard: GraphGuard) -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in guard.findings if f.severity in ("error", "warning")]


def test_passed_over_by_a_late_group_is_info_only():
    guard = _train(_no_bn)
    assert serious(guard) == []
    infos = [f for f in guard.findings if f.code == "GG011"]
    assert [f.severity for f in infos] == ["info"]
    assert infos[0].subject.summary.startswith("f32[8]")  # the norm's weight/bias, nothing else


def test_complete_unfreeze_is_silent():
    assert _train(_all).findings == []


def test_unfrozen_without_a_group_is_still_an_error():
    guard = _train(_forgotten)
    assert serious(guard) == [("GG011", "error")]
