# plain-torch: raises "does not require grad and does not have a grad_fn"
"""GG009: the loss goes through .item() and torch.tensor(...) before backward."""
import torch
import torch.nn as nn


def buggy():
    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    opt = torch.optim.Adam(net.parameters())
    x, y = torch.randn(10, 4), torch.randn(10, 1)
    err = ((net(x) - y) ** 2).mean().item()
    loss = torch.tensor(err)
    opt.zero_grad()
    loss.backward()  # expect: GG009 loss


def clean():
    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    opt = torch.optim.Adam(net.parameters())
    x, y = torch.randn(10, 4), torch.randn(10, 1)
    loss = ((net(x) - y) ** 2).mean()
    print(f"loss {loss.item():.3f}")
    opt.zero_grad()
    loss.backward()
    opt.step()
