# plain-torch: raises "backward through the graph a second time"
"""GG004: a spiking neuron keeps its membrane potential on `self` across time steps and, never
reset, across batches: the next batch's backward reaches the last one's graph."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LIF(nn.Module):
    def __init__(self, decay=0.6):
        super().__init__()
        self.decay = decay
        self.potential = torch.zeros(1)

    def reset(self):
        self.potential = torch.zeros(1)

    def forward(self, current):
        self.potential = self.decay * self.potential + current
        return torch.sigmoid(4 * (self.potential - 1.0))


def train(reset_each_batch):
    torch.manual_seed(0)
    fc, neuron = nn.Linear(4, 3), LIF()
    opt = torch.optim.Adam(fc.parameters(), lr=1e-2)
    for _ in range(3):
        x, y = torch.rand(6, 4), torch.randint(0, 3, (6,))
        if reset_each_batch:
            neuron.reset()
        rate = sum(neuron(fc(x)) for _ in range(4)) / 4
        loss = F.cross_entropy(rate, y)
        opt.zero_grad()
        loss.backward()  # expect: GG004 self.potential
        opt.step()


def buggy():
    train(reset_each_batch=False)


def clean():
    train(reset_each_batch=True)
