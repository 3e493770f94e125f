# plain-torch: runs
"""GG008: `.detach()` in forward() cuts a whole submodule off from the loss: one finding for the
module (all of its parameters lose their gradient to the same op), not one per parameter."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Tagger(nn.Module):
    def __init__(self, cut: bool) -> None:
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 16))
        self.out = nn.Linear(16, 4)
        self.cut = cut

    def forward(self, x):
        h = self.embed(x)
        if self.cut:
            h = h.detach()
        return self.out(h)


def run(cut: bool):
    torch.manual_seed(0)
    model = Tagger(cut)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(3):
        x, y = torch.randn(6, 10), torch.randint(0, 4, (6,))
        snapshot = model.embed[0].weight.detach().clone()  # a copy for logging: off the loss's path
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        norms = [p.grad.norm() for p in model.parameters() if p.grad is not None]
        opt.step()  # expect: GG008 model.embed
    return model, snapshot, norms


def buggy():
    model, _, norms = run(cut=True)
    assert model.embed[0].weight.grad is None and len(norms) == 2


def clean():
    model, _, norms = run(cut=False)
    assert len(norms) == 6
