# plain-torch: runs
"""GG011: hidden layers kept in a plain Python list, so model.parameters() misses them."""
import torch
import torch.nn as nn


class DeepMLP(nn.Module):
    def __init__(self, width=8, depth=2, registered=False) -> None:
        super().__init__()
        blocks = [nn.Linear(width, width) for _ in range(depth)]
        self.blocks = nn.ModuleList(blocks) if registered else blocks
        self.out = nn.Linear(width, 1)

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))  # expect: GG011 model.blocks
        return self.out(x)


def train(model, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(8)
    for _ in range(steps):
        x = torch.randn(16, 8, generator=g)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()


def buggy():
    torch.manual_seed(0)
    model = DeepMLP()
    before = model.blocks[0].weight.detach().clone()
    train(model)
    assert torch.equal(model.blocks[0].weight, before)  # the hidden layers never moved
    assert model.blocks[0].weight.grad is not None  # although backward computed their gradients


def clean():
    torch.manual_seed(0)
    train(DeepMLP(registered=True))
