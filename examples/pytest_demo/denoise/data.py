"""Synthetic data: clean sine waves and noisy copies of them."""
from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset


def noisy_sines(n: int = 256, length: int = 32, noise: float = 0.3, batch_size: int = 32,
                seed: int = 0) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    phase = torch.rand(n, 1, generator=g) * 6.28
    freq = 1 + torch.rand(n, 1, generator=g) * 3
    t = torch.linspace(0, 1, length)
    clean = torch.sin(freq * 6.28 * t + phase)
    noisy = clean + noise * torch.randn(n, length, generator=g)
    return DataLoader(TensorDataset(noisy, clean), batch_size=batch_size, shuffle=True, generator=g)
