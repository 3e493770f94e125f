# plain-torch: runs
"""GG007: softmax regression from scratch, weights scaled after requires_grad=True, then optimized.

Plain PyTorch raises ValueError (not RuntimeError) in the optimizer's constructor; buggy() asserts it.
"""
import torch
import torch.nn.functional as F


def buggy():
    torch.manual_seed(0)
    W = torch.randn(20, 5, requires_grad=True) * 0.01
    b = torch.zeros(5, requires_grad=True)
    try:
        opt = torch.optim.SGD([W, b], lr=0.5)  # expect: GG007 W
    except ValueError as err:
        assert "non-leaf" in str(err)
    else:
        raise AssertionError("the optimizer accepted a non-leaf tensor")


def clean():
    torch.manual_seed(0)
    W = (torch.randn(20, 5) * 0.01).requires_grad_()
    b = torch.zeros(5, requires_grad=True)
    opt = torch.optim.SGD([W, b], lr=0.5)
    x, y = torch.randn(32, 20), torch.randint(0, 5, (32,))
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(x @ W + b, y)
        loss.backward()
        assert W.grad is not None
        opt.step()
