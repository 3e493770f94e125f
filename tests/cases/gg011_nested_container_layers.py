# plain-torch: runs
"""GG011: per-branch [layer, activation] pairs kept in a plain dict of lists, so neither level is
registered and model.parameters() misses every branch layer."""
import torch
import torch.nn as nn


class Branchy(nn.Module):
    def __init__(self, width=6, registered=False) -> None:
        super().__init__()
        if registered:
            self.branches = nn.ModuleDict({k: nn.Sequential(nn.Linear(width, width), nn.Tanh())
                                           for k in ("left", "right")})
        else:
            self.branches = {k: [nn.Linear(width, width), nn.Tanh()] for k in ("left", "right")}
        self.merge = nn.Linear(2 * width, 1)

    def forward(self, x):
        outs = []
        for key in ("left", "right"):
            branch = self.branches[key]
            h = x
            for layer in branch:
                h = layer(h)  # expect: GG011 model.branches
            outs.append(h)
        return self.merge(torch.cat(outs, dim=1))


def train(model, steps=3):
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(3)
    for _ in range(steps):
        x = torch.randn(10, 6, generator=g)
        loss = (model(x).squeeze(1) - x.mean(1)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def buggy():
    torch.manual_seed(0)
    model = Branchy()
    first = model.branches["left"][0].weight
    before = first.detach().clone()
    train(model)
    assert first.grad is not None and torch.equal(first, before)  # gradients, never applied


def clean():
    torch.manual_seed(0)
    train(Branchy(registered=True))
