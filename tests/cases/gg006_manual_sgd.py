# plain-torch: raises "a leaf Variable that requires grad is being used in an in-place operation"
"""GG006: linear regression from scratch, the update written without torch.no_grad()."""
import torch


def make_data(n=64):
    g = torch.Generator().manual_seed(0)
    x = torch.cat([torch.randn(n, 3, generator=g), torch.ones(n, 1)], dim=1)  # bias column
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [0.3]])
    return x, y


def buggy():
    x, y = make_data()
    w = torch.randn(4, 1, requires_grad=True)
    lr = 0.1
    for epoch in range(5):
        pred = x @ w
        loss = ((pred - y) ** 2).mean()
        loss.backward()
        w -= lr * w.grad  # expect: GG006 w
        w.grad.zero_()


def clean():
    x, y = make_data()
    w = torch.randn(3, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    lr = 0.1
    for epoch in range(5):
        pred = x[:, :3] @ w + b
        loss = ((pred - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            b.sub_(lr * b.grad)
        w.grad.zero_()
        b.grad = None
    assert loss.item() < 10
    w.data.mul_(0.5)  # .data writes are invisible to autograd: not reported
    w.detach().add_(1.0)
