# plain-torch: runs
"""GG007: the program keeps its requires-grad leaf under a name (`base`) and trains a cast or
scaled copy of it by hand, reading the copy's .grad every step: that .grad is always None (the
gradient goes to `base`). Other spellings (.to(dtype), .float(), a scale, a dict entry, a device
move in a helper) are in tests/test_cast_copy_grad.py, one guard each."""
import torch


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, 3, generator=g)
    return x, x @ torch.tensor([1.0, -2.0, 0.5])


def fit(w, x, y, steps=3):
    grads = []
    for _ in range(steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        grads.append(w.grad)  # expect: GG007 w
    return grads


def buggy():
    x, y = data()
    base = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    w = base.type(torch.float32)
    assert fit(w, x, y) == [None] * 3 and base.grad is not None


def clean():
    x, y = data()
    base = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    w = base.type(torch.float32)
    ((x @ w - y) ** 2).mean().backward()
    assert base.grad is not None  # the leaf's gradient, read on the leaf
    copy = base.detach().float().requires_grad_()  # the cast made the leaf
    assert fit(copy, x, y, steps=2)[-1] is not None
    kept = base.float()
    kept.retain_grad()  # a copy whose gradient is asked for explicitly
    ((x @ kept - y) ** 2).mean().backward()
    assert kept.grad is not None
