"""Denoising models: a small MLP, and a variant with a learned gate on its refinement stage."""
from __future__ import annotations

import torch
from torch import nn


class Denoiser(nn.Module):
    def __init__(self, length: int = 32, hidden: int = 64) -> None:
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(length, hidden), nn.ReLU())
        self.decode = nn.Linear(hidden, length)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))


class GatedDenoiser(Denoiser):
    """Adds a refinement stage that a learned gate switches on once it helps."""

    def __init__(self, length: int = 32, hidden: int = 64) -> None:
        super().__init__(length, hidden)
        self.refine = nn.Linear(length, length)
        self.gate_logit = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        coarse = super().forward(x)
        gate = (self.gate_logit > 0).float()
        return coarse + gate * self.refine(coarse)
