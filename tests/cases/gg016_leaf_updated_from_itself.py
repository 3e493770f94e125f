# plain-torch: runs
"""GG016: a perturbation leaf written back through .data from a value that also depends on a trained step size: the step size never learns from the attack."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def data(n=3):
    g = torch.Generator().manual_seed(5)
    for _ in range(n):
        yield torch.randn(6, 4, generator=g), torch.randint(0, 3, (6,), generator=g)


def buggy():
    model, opt = setup()
    step_size = nn.Parameter(torch.tensor(0.1))
    size_opt = torch.optim.SGD([step_size], lr=0.1)
    for x, y in data():
        delta = torch.zeros_like(x, requires_grad=True)
        for _ in range(2):
            F.cross_entropy(model(x + delta), y).backward()
            delta.data = delta + step_size * delta.grad.sign()  # expect: GG016 delta
            delta.grad.zero_()
        loss = F.cross_entropy(model(x + delta.detach()), y) + 1e-3 * step_size ** 2
        opt.zero_grad()
        size_opt.zero_grad()
        loss.backward()
        opt.step()
        size_opt.step()
    assert delta.grad_fn is None


def clean():
    model, opt = setup()
    eps = 0.3
    for x, y in data():
        delta = torch.zeros_like(x).uniform_(-eps, eps)
        delta.requires_grad = True
        for _ in range(2):
            F.cross_entropy(model(x + delta), y).backward()
            grad = delta.grad.detach()
            delta.data = torch.clamp(delta + 0.1 * torch.sign(grad), -eps, eps)
            delta.data = torch.max(torch.min(delta, 1 - x), -x)
            delta.grad.zero_()
        delta = delta.detach()
        loss = F.cross_entropy(model(x + delta), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    weights = nn.Parameter(torch.ones(2))
    for _ in range(2):
        weights.data = weights / weights.sum() * 2
