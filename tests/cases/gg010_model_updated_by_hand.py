# plain-torch: runs
"""GG010: a hand-written optimizer applies the gradients of a model's parameters and nobody zeroes
them: the model is what to zero (`net.zero_grad()`), not the helper's loop variable. Don't
trigger: the model zeroed before each backward, or each gradient dropped after its update."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Momentum:
    def __init__(self, lr=0.05, beta=0.9):
        self.lr, self.beta, self.bufs = lr, beta, {}

    def update(self, params, drop=False):
        with torch.no_grad():
            for p in params:
                buf = self.bufs.setdefault(id(p), torch.zeros_like(p))
                buf.mul_(self.beta).add_(p.grad)
                p.add_(buf, alpha=-self.lr)  # expect: GG010 net
                if drop:
                    p.grad = None


def batches():
    g = torch.Generator().manual_seed(4)
    return [(torch.randn(8, 5, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(4)]


def buggy():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = Momentum()
    for x, y in batches():
        F.cross_entropy(net(x), y).backward()
        opt.update(list(net.parameters()))
    ref = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    ref.load_state_dict(net.state_dict())
    x, y = batches()[-1]
    F.cross_entropy(ref(x), y).backward()
    assert (net[2].weight.grad - ref[2].weight.grad).norm() > 0.1 * ref[2].weight.grad.norm()


def clean():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = Momentum()
    for x, y in batches():
        net.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.update(list(net.parameters()))
    # (a fresh model: the loop above leaves its last gradients in .grad, and a first backward
    # onto them would be the misuse itself, which full recording reports)
    net = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = Momentum()
    for x, y in batches():
        F.cross_entropy(net(x), y).backward()
        opt.update(list(net.parameters()), drop=True)
