# plain-torch: raises "a leaf Variable that requires grad is being used in an in-place operation"
"""GG006: a hand-written optimizer whose step() updates the parameters in place with grad mode on
(no @torch.no_grad() on it), unlike torch's own optimizers."""
import torch
import torch.nn as nn


class Momentum(torch.optim.Optimizer):
    def __init__(self, params, lr=0.05, beta=0.9):
        super().__init__(params, {"lr": lr, "beta": beta})

    def _update(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                buf = self.state[p].setdefault("buf", torch.zeros_like(p))
                buf.mul_(group["beta"]).add_(p.grad)
                p.sub_(buf, alpha=group["lr"])  # expect: GG006 net.weight

    def step(self, closure=None):
        self._update()


class NoGradMomentum(Momentum):
    @torch.no_grad()
    def step(self, closure=None):
        self._update()


def train(opt_cls):
    torch.manual_seed(0)
    net = nn.Linear(3, 1)
    opt = opt_cls(net.parameters())
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    for _ in range(2):
        loss = ((net(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def buggy():
    train(Momentum)


def clean():
    train(NoGradMomentum)
