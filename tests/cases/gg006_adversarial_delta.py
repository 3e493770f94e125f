# plain-torch: raises "a leaf Variable that requires grad is being used in an in-place operation"
"""GG006: a PGD-style perturbation updated with += while grad mode is on."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def buggy():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 4)).eval()
    images, labels = torch.randn(6, 20), torch.randint(0, 4, (6,))
    delta = torch.zeros_like(images, requires_grad=True)
    for _ in range(3):
        loss = F.cross_entropy(model(images + delta), labels)
        loss.backward()
        delta += 0.01 * delta.grad.sign()  # expect: GG006 delta
        delta.grad.zero_()


def clean():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 4)).eval()
    images, labels = torch.randn(6, 20), torch.randint(0, 4, (6,))
    delta = torch.zeros_like(images, requires_grad=True)
    for _ in range(3):
        loss = F.cross_entropy(model(images + delta), labels)
        loss.backward()
        with torch.no_grad():
            delta += 0.01 * delta.grad.sign()
            delta.clamp_(-0.03, 0.03)
        delta.grad.zero_()
    scaled = delta * 2
    scaled += 1  # not a leaf: in-place on an intermediate result is allowed
    shifted = images.clone()
    shifted += 1  # does not require grad
