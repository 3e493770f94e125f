# plain-torch: runs
"""GG101: a small metrics logger object that keeps every loss it is given, graph included."""
import torch
import torch.nn as nn


class MetricLogger:
    def __init__(self) -> None:
        self.history = []
        self.best = None

    def log(self, loss):
        self.history.append(loss)  # expect: GG101 logger.history
        value = float(loss.detach()) if isinstance(loss, torch.Tensor) else loss
        if self.best is None or value < self.best:
            self.best = value


class ItemLogger(MetricLogger):
    def log(self, loss):
        super().log(loss.item())


def run(logger, steps=5):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 2))
    opt = torch.optim.SGD(net.parameters(), lr=0.05, nesterov=True, momentum=0.9)
    g = torch.Generator().manual_seed(24)
    for _ in range(steps):
        x = torch.randn(7, 5, generator=g)
        loss = nn.functional.cross_entropy(net(x), (x[:, 0] > 0).long())
        opt.zero_grad()
        loss.backward()
        opt.step()
        logger.log(loss)
    return logger


def buggy():
    logger = run(MetricLogger())
    assert len(logger.history) == 5 and logger.history[0].grad_fn is not None


def clean():
    logger = run(ItemLogger())
    assert isinstance(logger.history[0], float)
