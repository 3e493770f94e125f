# plain-torch: runs
"""GG010: a Trainer that zeroes the gradients once per epoch instead of once per step."""
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, zero_each_step: bool) -> None:
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=1e-2)
        self.criterion = nn.SmoothL1Loss()
        self.zero_each_step = zero_each_step

    def fit(self, data, epochs=2):
        for _ in range(epochs):
            self.optimizer.zero_grad()
            for x, y in data:
                if self.zero_each_step:
                    self.optimizer.zero_grad(set_to_none=False)
                loss = self.criterion(self.net(x), y)
                loss.backward()
                self.optimizer.step()  # expect: GG010 self.optimizer
        return self.net[0].weight.detach().clone()


def dataset():
    g = torch.Generator().manual_seed(5)
    xs = [torch.randn(8, 4, generator=g) for _ in range(3)]
    return [(x, x.sum(1, keepdim=True).sin()) for x in xs]


def buggy():
    lazy = Trainer(zero_each_step=False).fit(dataset())
    assert not torch.allclose(lazy, Trainer(zero_each_step=True).fit(dataset()))


def clean():
    Trainer(zero_each_step=True).fit(dataset())
