# plain-torch: runs
"""GG104: torch.tensor([...]) assembled from parameter elements loses their gradient."""
import torch


def buggy():
    torch.manual_seed(0)
    scale = torch.tensor([2.0, 3.0], requires_grad=True)
    opt = torch.optim.SGD([scale], lr=0.1)
    points = torch.randn(10, 2)
    diag = torch.tensor([scale[0], scale[1]])  # expect: GG104 diag
    loss = (points * diag).pow(2).mean() + scale.sum() * 0
    opt.zero_grad()
    loss.backward()
    assert float(scale.grad.abs().sum()) == 0.0  # only the "* 0" term reached it


def clean():
    torch.manual_seed(0)
    scale = torch.tensor([2.0, 3.0], requires_grad=True)
    opt = torch.optim.SGD([scale], lr=0.1)
    points = torch.randn(10, 2)
    diag = torch.stack([scale[0], scale[1]])
    loss = (points * diag).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    frozen = scale.detach().clone()
    assert not frozen.requires_grad
