# plain-torch: raises "modified by an inplace operation"
"""GG004: temporal self-ensembling keeps the model's output of the previous batch as the next
batch's target without detach; the optimizer steps in between, so the next backward runs into
the old forward's graph whose saved weights changed. Named where the model was called."""
import torch
import torch.nn as nn


class Smoother:
    def __init__(self, detach: bool):
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.05)
        self.detach = detach
        self.previous = None

    def remember(self, x):
        last_output = self.net(x)
        if self.detach:
            last_output = last_output.detach()
        return last_output

    def step(self, x):
        pred = self.net(x)
        upcoming = self.remember(x)  # the next batch's target, made before this step
        if self.previous is not None:
            loss = ((pred - self.previous) ** 2).mean()
            self.opt.zero_grad()
            loss.backward()  # expect: GG004 last_output
            self.opt.step()  # expect: GG005 self.previous
        self.previous = upcoming


def buggy():
    s = Smoother(detach=False)
    for _ in range(4):
        s.step(torch.randn(6, 4))


def clean():
    s = Smoother(detach=True)
    for _ in range(4):
        s.step(torch.randn(6, 4))
