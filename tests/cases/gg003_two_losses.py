# plain-torch: raises "backward through the graph a second time"
"""GG003: two losses share a trunk, each with its own backward."""
import torch
import torch.nn as nn


def buggy():
    torch.manual_seed(0)
    trunk, head_a, head_b = nn.Linear(4, 8), nn.Linear(8, 1), nn.Linear(8, 1)
    x = torch.randn(16, 4)
    features = torch.tanh(trunk(x))
    loss_a = head_a(features).pow(2).mean()
    loss_b = head_b(features).abs().mean()
    loss_a.backward()
    loss_b.backward()  # expect: GG003 features


def clean():
    torch.manual_seed(0)
    trunk, head_a, head_b = nn.Linear(4, 8), nn.Linear(8, 1), nn.Linear(8, 1)
    opt = torch.optim.SGD([*trunk.parameters(), *head_a.parameters(), *head_b.parameters()], lr=0.01)
    for _ in range(2):
        x = torch.randn(16, 4)
        features = torch.tanh(trunk(x))
        loss_a = head_a(features).pow(2).mean()
        loss_b = head_b(features).abs().mean()
        loss_a.backward(retain_graph=True)  # legitimate: the graph is kept for the second loss
        loss_b.backward()
        opt.step()
        opt.zero_grad()
        features = torch.tanh(trunk(x))
        (head_a(features).pow(2).mean() + head_b(features).abs().mean()).backward()  # summed
        opt.step()
        opt.zero_grad()
