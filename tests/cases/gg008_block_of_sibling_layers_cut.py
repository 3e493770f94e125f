# plain-torch: runs
"""GG008: a block of the user's holds two projections (`query`, `key`) whose scores make a
mixing matrix; the matrix is detached before it mixes the features, so both
projections get no gradient at every step while the rest trains. One finding, named by the
block (`model.mixer`), not by each projection."""
import torch
import torch.nn as nn


class Mixer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.query = nn.Linear(d, 4)
        self.key = nn.Linear(d, 4)

    def forward(self, x):
        return torch.softmax(self.query(x) @ self.key(x).t(), dim=-1)


class Net(nn.Module):
    def __init__(self, d=6, detach_mix=True):
        super().__init__()
        self.mixer = Mixer(d)
        self.out = nn.Linear(d, 1)
        self.detach_mix = detach_mix

    def forward(self, x):
        mix = self.mixer(x)
        if self.detach_mix:
            mix = mix.detach()
        return self.out(mix @ x)


def run(detach_mix):
    torch.manual_seed(0)
    model = Net(detach_mix=detach_mix)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(3):
        x, y = torch.randn(8, 6), torch.randn(8, 1)
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()  # expect: GG008 model.mixer
    return model


def buggy():
    model = run(True)
    assert model.mixer.query.weight.grad is None and model.out.weight.grad is not None


def clean():
    model = run(False)
    assert model.mixer.query.weight.grad is not None
