# plain-torch: runs
"""GG010: a d2l-style `sgd` helper updates through `.data` with grad mode on and nobody zeroes
the gradients; the leaves were made trainable with `requires_grad_()` after being built."""
import torch


def batches(n=6):
    g = torch.Generator().manual_seed(3)
    for _ in range(n):
        X = torch.randn(10, 2, generator=g)
        yield X, X @ torch.tensor([[1.5], [-2.0]]) + 0.3


def sgd(params, lr, batch_size, zero=False):
    for param in params:
        param.data.sub_(lr * param.grad / batch_size)  # expect: GG010 weight, GG010 bias
        if zero:
            param.grad.data.zero_()


def fit(zero: bool):
    weight = torch.zeros(2, 1)
    bias = torch.zeros(1)
    weight.requires_grad_()
    bias.requires_grad_()
    for X, y in batches():
        l = ((X @ weight + bias - y) ** 2 / 2).sum()
        l.backward()
        sgd([weight, bias], 0.1, 10, zero=zero)
    return weight.detach().clone()


def buggy():
    weight = torch.zeros(2, 1)
    bias = torch.zeros(1)
    weight.requires_grad_()
    bias.requires_grad_()
    for X, y in batches():
        l = ((X @ weight + bias - y) ** 2 / 2).sum()
        l.backward()
        sgd([weight, bias], 0.1, 10)
    assert not torch.allclose(weight, fit(zero=True))


def clean():
    fit(zero=True)
    # a `.data` write that is not an update from gradients: the weights are clipped, the
    # gradients are cleared before every backward
    w = torch.randn(3, requires_grad=True)
    for X, y in batches(3):
        w.grad = None
        (w.sum() * X.mean()).backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
        w.data.clamp_(-0.5, 0.5)
