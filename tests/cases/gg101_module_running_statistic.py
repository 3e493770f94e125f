# plain-torch: runs
"""GG101: a nested module keeps a running statistic as a plain tensor attribute and updates it
from each batch with grad mode on; the loss never reads it, so every step's graph stays alive."""
import torch
import torch.nn as nn


class ScaleTracker(nn.Module):
    def __init__(self, track_grad: bool) -> None:
        super().__init__()
        self.scale = torch.ones(())
        self.track_grad = track_grad

    def forward(self, x):
        if self.track_grad:
            self.scale = 0.9 * self.scale + 0.1 * x.abs().amax()  # expect: GG101 net[0].tracker.scale
        else:
            with torch.no_grad():
                self.scale = 0.9 * self.scale + 0.1 * x.abs().amax()
        return x


class Encoder(nn.Module):
    def __init__(self, track_grad: bool) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 8)
        self.tracker = ScaleTracker(track_grad)

    def forward(self, x):
        return torch.tanh(self.tracker(self.proj(x)))


def run(track_grad: bool, steps=8):
    torch.manual_seed(0)
    net = nn.Sequential(Encoder(track_grad), nn.Linear(8, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    for _ in range(steps):
        x = torch.randn(6, 4)
        loss = (net(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net


def buggy():
    net = run(track_grad=True)
    assert net[0].tracker.scale.grad_fn is not None


def clean():
    net = run(track_grad=False)
    assert net[0].tracker.scale.grad_fn is None
