# plain-torch: runs
"""GG016: `.data = ...` on every parameter after the step: the trained ones lose their update;
the frozen momentum copy that `model.parameters()` also hands the optimizer is the program's."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.online = nn.Linear(5, 4)
        self.target = nn.Linear(5, 4)
        for p_o, p_t in zip(self.online.parameters(), self.target.parameters()):
            p_t.data.copy_(p_o.data)
            p_t.requires_grad = False

    def forward(self, x):
        with torch.no_grad():
            t = self.target(x)
        return self.online(x), t


def data(n=4):
    g = torch.Generator().manual_seed(3)
    for _ in range(n):
        yield torch.randn(6, 5, generator=g)


def buggy():
    torch.manual_seed(0)
    model = Pair()
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    before = model.online.weight.detach().clone()
    for x in data():
        opt.zero_grad()
        q, k = model(x)
        F.mse_loss(q, k + 1.0).backward()
        opt.step()
        for p in model.online.parameters():
            p.data = before if p.dim() == 2 else p.data  # expect: GG016 p
    assert torch.equal(model.online.weight, before)  # every update of the weight discarded


def clean():
    torch.manual_seed(0)
    model = Pair()
    m = 0.9
    for opt in (torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9),
                torch.optim.Adam(model.parameters(), lr=0.01)):
        for x in data():
            q, k = model(x)
            loss = F.mse_loss(q, k + 1.0)
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for p_o, p_t in zip(model.online.parameters(), model.target.parameters()):
                    p_t.data = p_t.data * m + p_o.data * (1.0 - m)  # the frozen copy: no step updates it
