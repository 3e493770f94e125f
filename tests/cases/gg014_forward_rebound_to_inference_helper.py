# plain-torch: raises "Inference tensors cannot be saved for backward"
"""GG014: an encoder's forward is replaced by a helper decorated with @torch.inference_mode();
the training code calls the encoder as usual, so the finding names the rebound attribute
(`model.encoder.forward`) and keeps the decorator as the fix-at line."""
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 8)

    @torch.inference_mode()
    def frozen_features(self, x):
        return torch.tanh(self.proj(x))

    def plain_features(self, x):
        return torch.tanh(self.proj(x)).detach()


class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.encoder(x))  # expect: GG014 model.encoder.forward


def fit(model, steps):
    opt = torch.optim.SGD(model.head.parameters(), lr=0.1)
    for _ in range(steps):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


def buggy():
    torch.manual_seed(0)
    model = Probe()
    model.encoder.forward = model.encoder.frozen_features
    fit(model, 2)


def clean():
    torch.manual_seed(0)
    model = Probe()
    model.encoder.forward = model.encoder.plain_features
    fit(model, 3)
