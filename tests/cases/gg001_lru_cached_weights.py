# plain-torch: raises "backward through the graph a second time"
"""GG001: mixture weights computed from a trained parameter by a functools.lru_cache'd helper: the
first call's tensor, with its freed graph, comes back every iteration."""
import functools

import torch
import torch.nn.functional as F


def train(cached):
    torch.manual_seed(0)
    logits = torch.nn.Parameter(torch.zeros(3))
    experts = torch.randn(3, 16)
    target = torch.randn(16)
    opt = torch.optim.Adam([logits], lr=0.1)

    def mixture(temperature):
        return torch.softmax(logits / temperature, dim=0)

    get = functools.lru_cache(maxsize=8)(mixture) if cached else mixture
    for step in range(3):
        weights = get(1.0)
        loss = F.mse_loss(weights @ experts, target)
        opt.zero_grad()
        loss.backward()  # expect: GG001 weights
        opt.step()


def buggy():
    train(cached=True)


def clean():
    train(cached=False)
