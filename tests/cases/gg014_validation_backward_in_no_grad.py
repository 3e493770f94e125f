# plain-torch: raises "element 0 of tensors does not require grad"
"""GG014: a helper decorated with @torch.no_grad() computes the loss that training backpropagates."""
import torch
import torch.nn as nn


@torch.no_grad()
def score(model, batch):
    return (model(batch) - 1).abs().mean()


def buggy():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = score(model, torch.randn(4, 3))
    opt.zero_grad()
    loss.backward()  # expect: GG009 loss, GG014 loss
    opt.step()


def clean():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        loss = (model(torch.randn(4, 3)) - 1).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(score(model, torch.randn(4, 3)).item())  # evaluation under no_grad: fine
