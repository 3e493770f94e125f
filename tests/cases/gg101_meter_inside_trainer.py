# plain-torch: runs
"""GG101: a trainer keeps a meter object whose dict of running sums adds each step's loss terms,
graphs included (two objects deep from the loop's variable)."""
import torch
import torch.nn as nn


class Meter:
    def __init__(self) -> None:
        self.sums = {}
        self.count = 0

    def add(self, terms, detach: bool):
        for key, value in terms.items():
            value = value.item() if detach else value
            self.sums[key] = self.sums.get(key, 0) + value  # expect: GG101 self.meter.sums['mse'], GG101 self.meter.sums['l1']
        self.count += 1


class Trainer:
    def __init__(self, detach: bool) -> None:
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-2)
        self.meter = Meter()
        self.detach = detach

    def step(self, x, y):
        out = self.net(x)
        terms = {"mse": ((out - y) ** 2).mean(), "l1": out.abs().mean() * 1e-3}
        self.opt.zero_grad()
        (terms["mse"] + terms["l1"]).backward()
        self.opt.step()
        return terms


def run(detach: bool, steps=6):
    trainer = Trainer(detach)
    g = torch.Generator().manual_seed(8)
    for _ in range(steps):
        x = torch.randn(5, 4, generator=g)
        terms = trainer.step(x, x.sum(1, keepdim=True))
        trainer.meter.add(terms, detach)
    return trainer


def buggy():
    trainer = run(detach=False)
    assert trainer.meter.sums["mse"].grad_fn is not None


def clean():
    trainer = run(detach=True)
    assert isinstance(trainer.meter.sums["mse"], float)
