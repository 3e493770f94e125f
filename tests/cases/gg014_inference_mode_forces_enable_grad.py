# plain-torch: raises "does not require grad"
"""GG014: forces computed as the gradient of an energy inside `torch.enable_grad()`, in an
evaluation decorated with `@torch.inference_mode()`, which enable_grad does not lift."""
import torch
import torch.nn as nn


class EnergyModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1, bias=False))

    def forces(self, pos):
        with torch.enable_grad():
            pos = pos.clone().requires_grad_(True)
            energy = self.net(pos).sum()
            return -torch.autograd.grad(energy, pos, create_graph=True)[0]  # expect: GG014 energy


def train(model, steps=2):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        pos = torch.randn(5, 3)
        loss = model.forces(pos).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


@torch.inference_mode()
def evaluate_inference(model):
    return model.forces(torch.randn(5, 3)).norm()


@torch.no_grad()
def evaluate_no_grad(model):
    return model.forces(torch.randn(5, 3)).norm()


def buggy():
    torch.manual_seed(0)
    model = EnergyModel()
    train(model)
    evaluate_inference(model)


def clean():
    torch.manual_seed(0)
    model = EnergyModel()
    train(model)
    evaluate_no_grad(model)
