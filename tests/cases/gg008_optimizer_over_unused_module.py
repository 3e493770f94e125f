# plain-torch: runs
"""GG008: the only optimizer holds a gating module the forward never calls, and the loss comes
from a network of another make that no optimizer holds. The finding names what the optimizer
holds (the gate's layer), not the network that the loss reaches: that one is not "another
instance" of what the optimizer was built over. When the model the optimizer was built over is
no longer named (replaced by an instance of a subclass), the replacement names it. Clean twin: the gate scales the network's output
and both are optimized."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.score = nn.Linear(4, 1)

    def forward(self, x):
        return torch.sigmoid(self.score(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 3)

    def forward(self, x):
        return self.body(self.pre(x))

    def pre(self, x):
        return x


class WideNet(Net):
    """A subclass with one layer more: another make, but the replaced instance is no longer named."""

    def __init__(self):
        super().__init__()
        self.extra = nn.Linear(4, 4)

    def pre(self, x):
        return torch.tanh(self.extra(x))


def buggy():
    torch.manual_seed(0)
    net, gate = Net(), Gate()
    opt = torch.optim.SGD(gate.parameters(), lr=0.1)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()  # expect: GG008 gate.score
    assert gate.score.weight.grad is None
    # the optimizer over a first model, the loop over its replacement of a subclass: named by it
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model = WideNet()
    for _ in range(3):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()  # expect: GG008 model


def clean():
    torch.manual_seed(0)
    net, gate = Net(), Gate()
    opt = torch.optim.SGD(list(net.parameters()) + list(gate.parameters()), lr=0.1)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(net(x) * gate(x), y)
        loss.backward()
        opt.step()
