# plain-torch: raises "backward through the graph a second time"
"""GG004: a layer computes a scale from this batch's activations at the end of `forward` and keeps
it on `self` for the next batch: no backward ever runs through that value, but the next loss
reaches last batch's graph through it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def scale_of(amax):
    return 4.0 / torch.clamp(amax, min=1e-6)


class ScaledLinear(nn.Linear):
    def __init__(self, n_in, n_out, detach_stat):
        super().__init__(n_in, n_out)
        self.detach_stat = detach_stat
        self.running_scale = torch.ones(())

    def forward(self, x):
        y = F.linear(x * self.running_scale, self.weight, self.bias)
        stat = x.abs().amax()
        if self.detach_stat:
            stat = stat.detach()
        self.running_scale = scale_of(stat)
        return y


def train(detach_stat):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), ScaledLinear(8, 3, detach_stat))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(3):
        x, y = torch.randn(5, 6), torch.randn(5, 3)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()  # expect: GG004 self.running_scale
        opt.step()


def buggy():
    train(detach_stat=False)


def clean():
    train(detach_stat=True)
