# plain-torch: runs
"""GG104: `.new_tensor(pred)` copies the prediction; `.new_tensor([constants])` copies nothing."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    net = nn.Linear(3, 3)
    return net, torch.randn(4, 3)


def buggy():
    net, x = setup()
    pred = net(x)
    scaled = x.new_tensor(pred)  # expect: GG104 scaled
    assert not scaled.requires_grad


def clean():
    net, x = setup()
    batch = net(x)
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(1, -1)
    loss = F.mse_loss(batch - mean, torch.zeros(4, 3))
    loss.backward()
