# plain-torch: runs
"""GG008: a `.detach()` left in forward() cuts the first layer off from the loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, stop_gradient):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)
        self.stop_gradient = stop_gradient

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if self.stop_gradient:
            h = h.detach()
        return self.fc2(h)


def train(stop_gradient):
    torch.manual_seed(0)
    model = Encoder(stop_gradient)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.fc1.weight.detach().clone()
    for _ in range(2):
        x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()  # expect: GG008 model.fc1
    return before, model


def buggy():
    before, model = train(stop_gradient=True)
    assert model.fc1.weight.grad is None
    assert torch.equal(before, model.fc1.weight)  # the first layer never learned


def clean():
    train(stop_gradient=False)
