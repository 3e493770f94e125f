# plain-torch: raises "backward through the graph a second time"
"""GG003: one head's output is chunked into a mean and a log-variance, and each half's loss is
backwarded on its own; both halves are outputs of one chunk of the shared head."""
import torch
import torch.nn as nn


def train(summed: bool, steps=2):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 4))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    for _ in range(steps):
        x, y = torch.randn(8, 4), torch.randn(8, 2)
        head_out = net(x)
        mu, log_var = torch.chunk(head_out, 2, dim=1)
        loss_mu = (mu - y).pow(2).mean()
        loss_var = (log_var.exp() - (mu.detach() - y).pow(2)).abs().mean()
        opt.zero_grad()
        if summed:
            (loss_mu + loss_var).backward()
        else:
            loss_mu.backward()
            loss_var.backward()  # expect: GG003 head_out
        opt.step()


def buggy():
    train(summed=False)


def clean():
    train(summed=True)
