# plain-torch: runs
"""GG007: per-layer gains built in a list comprehension with requires_grad=True and then cast to
each weight's dtype: every element is a non-leaf copy. The finding names the list once.
Plain PyTorch raises ValueError (not RuntimeError) in the optimizer's constructor; buggy() asserts it."""
import torch
import torch.nn as nn


def weights():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    return [m.weight for m in net if isinstance(m, nn.Linear)]


def buggy():
    ws = weights()
    gains = [torch.full((1,), 0.5, requires_grad=True).to(w) for w in ws]
    try:
        torch.optim.SGD(gains, lr=0.1)  # expect: GG007 gains
    except ValueError as err:
        assert "non-leaf" in str(err)
    else:
        raise AssertionError("the optimizer accepted non-leaf tensors")


def clean():
    ws = weights()
    gains = [torch.full((1,), 0.5, dtype=w.dtype, requires_grad=True) for w in ws]
    opt = torch.optim.SGD(gains, lr=0.1)
    loss = sum((g * w).sum() for g, w in zip(gains, ws))
    loss.backward()
    opt.step()
