# plain-torch: runs
"""GG013: activations quantized with floor, no straight-through estimator: the encoder gets zeros."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class AE(nn.Module):
    def __init__(self, ste):
        super().__init__()
        self.enc = nn.Linear(6, 3)
        self.dec = nn.Linear(3, 6)
        self.ste = ste

    def forward(self, x):
        z = torch.sigmoid(self.enc(x)) * 8
        q = z.floor()
        if self.ste:
            q = z + (q - z).detach()
        return self.dec(q)


def run(ste):
    torch.manual_seed(0)
    model = AE(ste)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 6)
    for _ in range(3):
        opt.zero_grad()
        loss = F.mse_loss(model(x), x)
        loss.backward()
        opt.step()  # expect: GG013 model.enc.weight
    return model


def buggy():
    model = run(False)
    assert not model.enc.weight.grad.any() and model.dec.weight.grad.any()


def clean():
    run(True)
