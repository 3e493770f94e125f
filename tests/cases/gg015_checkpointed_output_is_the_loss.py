# plain-torch: raises "does not require grad"
"""GG015: every layer is reentrant-checkpointed and the loss is read from their output directly
(a feature-matching loss), so backward finds no graph at all. The checkpoint is the cause:
nothing is reported as a loss computed under no_grad."""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Stack(nn.Module):
    def __init__(self, reentrant: bool) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Sequential(nn.Linear(6, 6), nn.GELU()) for _ in range(3))
        self.reentrant = reentrant

    def forward(self, x):
        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=self.reentrant)  # expect: GG015 x
        return x


def run(reentrant: bool, steps=2):
    torch.manual_seed(0)
    model = Stack(reentrant)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    target = torch.randn(4, 6)
    for _ in range(steps):
        feats = model(torch.randn(4, 6))
        loss = (feats - target).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def buggy():
    run(reentrant=True)


def clean():
    run(reentrant=False)
