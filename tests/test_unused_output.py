"""GG008 tells a module the forward never calls (warning) from one it calls whose output the loss
leaves unused (info): a pretrained encoder's pooler under mean pooling is a correct program, and
the default raise mode must let it run; a forgotten loss term has the same shape and is still
reported, by name, as information."""
from __future__ import annotations

import torch
import torch.nn as nn

from graphguard import GraphGuard


class Encoder(nn.Module):
    def __init__(self, call_pooler: bool = True) -> None:
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.pooler = nn.Linear(8, 8)
        self.call_pooler = call_pooler

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        h = self.body(x)
        pooled = torch.tanh(self.pooler(h[:, 0])) if self.call_pooler else None
        return h, pooled


def mean_pooling_training(call_pooler: bool, steps: int = 4) -> Encoder:
    torch.manual_seed(0)
    model = Encoder(call_pooler)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(steps):
        hidden, _ = model(torch.randn(2, 3, 4))
        loss = hidden.mean(dim=1).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def gg008(g: GraphGuard) -> list[tuple[str, str | None]]:
    return [(f.severity, f.subject.name) for f in g.findings if f.code == "GG008"]


def test_plain_torch_pooler_never_gets_a_gradient() -> None:
    model = mean_pooling_training(call_pooler=True)
    assert model.pooler.weight.grad is None and model.body.weight.grad is not None


def test_called_pooler_with_unused_output_is_information_and_runs_in_raise_mode() -> None:
    with GraphGuard() as g:  # default mode: an error would stop the program
        mean_pooling_training(call_pooler=True)
    assert gg008(g) == [("info", "model.pooler")]
    assert not [f for f in g.findings if f.severity in ("warning", "error")]


def test_module_never_called_is_still_a_warning() -> None:
    with GraphGuard(mode="collect") as g:
        mean_pooling_training(call_pooler=False)
    assert gg008(g) == [("warning", "model.pooler")]


def test_forgotten_aux_loss_is_reported_by_name() -> None:
    torch.manual_seed(0)
    trunk, head, aux_head = nn.Linear(4, 8), nn.Linear(8, 1), nn.Linear(8, 1)
    params = [*trunk.parameters(), *head.parameters(), *aux_head.parameters()]
    opt = torch.optim.SGD(params, lr=0.1)
    with GraphGuard(mode="collect") as g:
        for _ in range(4):
            x, y = torch.randn(8, 4), torch.randn(8, 1)
            h = torch.relu(trunk(x))
            out, aux = head(h), aux_head(h)
            loss = nn.functional.mse_loss(out, y)  # the aux term was meant to be added
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert aux_head.weight.grad is None
    assert gg008(g) == [("info", "aux_head")]
