"""Training and evaluation loops."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader


def train(model: nn.Module, loader: DataLoader, epochs: int = 3, lr: float = 1e-2,
          accumulate: int = 1) -> list[float]:
    """Train with Adam; ``accumulate`` batches per optimizer step. Returns the loss per epoch."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    for _ in range(epochs):
        total = 0.0
        opt.zero_grad()
        for i, (noisy, clean) in enumerate(loader, 1):
            loss = F.mse_loss(model(noisy), clean)
            (loss / accumulate).backward()
            if i % accumulate == 0:
                opt.step()
                opt.zero_grad()
            total += loss.item()
        history.append(total / len(loader))
    return history


@torch.no_grad()
def evaluate(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    losses = [F.mse_loss(model(noisy), clean).item() for noisy, clean in loader]
    model.train()
    return sum(losses) / len(losses)
