# plain-torch: runs
"""GG010: linear regression by hand, the gradients never reset between updates."""
import torch


def data():
    g = torch.Generator().manual_seed(2)
    X = torch.randn(32, 2, generator=g)
    return X, X @ torch.tensor([[2.0], [-1.0]]) + 0.5


def fit(reset: str | None, steps=5, lr=0.1):
    X, y = data()
    w = torch.zeros(2, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    for _ in range(steps):
        loss = ((X @ w + b - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        if reset == "zero_":
            w.grad.zero_()
            b.grad.zero_()
        elif reset == "data":
            w.grad.data.zero_()
            b.grad.data.zero_()
        elif reset == "none":
            w.grad = None
            b.grad = None
    return w.detach().clone()


def buggy():
    X, y = data()
    w = torch.zeros(2, 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    lr = 0.1
    for epoch in range(5):
        y_hat = X @ w + b
        loss = ((y_hat - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad  # expect: GG010 w
            b.data -= lr * b.grad.data  # expect: GG010 b
    assert not torch.allclose(w, fit("zero_"))


def clean():
    reference = fit("zero_")
    assert torch.allclose(fit("data"), reference)
    assert torch.allclose(fit("none"), reference)
