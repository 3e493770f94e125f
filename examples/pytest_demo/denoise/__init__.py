"""A tiny 1-D signal denoiser: the project whose tests the graphguard pytest demo runs."""
from .data import noisy_sines
from .model import Denoiser, GatedDenoiser
from .train import evaluate, train

__all__ = ["noisy_sines", "Denoiser", "GatedDenoiser", "train", "evaluate"]
