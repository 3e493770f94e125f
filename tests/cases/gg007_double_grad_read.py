# plain-torch: runs
"""GG007: a float64 model written by hand; `.double()` after requires_grad=True hides the leaf."""
import torch


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, 4, generator=g, dtype=torch.float64)
    return x, x.sum(1, keepdim=True)


def buggy():
    x, y = data()
    w = torch.zeros(4, 1, requires_grad=True).double()
    for _ in range(2):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        grad = w.grad  # expect: GG007 w
        assert grad is None  # plain torch: the gradient went to the hidden float32 leaf


def clean():
    x, y = data()
    w = torch.zeros(4, 1, dtype=torch.float64, requires_grad=True)
    for _ in range(3):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
        w.grad.zero_()
    h = x @ w
    h.retain_grad()  # an intermediate whose gradient is asked for explicitly
    (h ** 2).sum().backward()
    assert h.grad is not None
    scaled = w * 2  # derived from a named leaf: reading its .grad is not this rule's business
    scaled.sum().backward()
    _ = w.grad
