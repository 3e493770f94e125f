# plain-torch: runs
"""GG103: inputs created with requires_grad=True every batch, for nothing."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def buggy():
    torch.manual_seed(0)
    model = nn.Linear(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        batch = torch.randn(4, 5, requires_grad=True)  # expect: GG103 batch
        loss = F.cross_entropy(model(batch), torch.tensor([0, 1, 0, 1]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert batch.grad is not None  # autograd computed input gradients nobody reads


def clean():
    torch.manual_seed(0)
    model = nn.Linear(5, 2)
    image = torch.randn(1, 5)
    image.requires_grad_()  # saliency: the input gradient is what we want
    score = model(image)[0, 1]
    score.backward()
    saliency = image.grad.abs()
    assert saliency.shape == (1, 5)
