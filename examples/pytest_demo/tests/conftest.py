import pytest
import torch

from denoise import Denoiser, noisy_sines


@pytest.fixture
def loader():
    return noisy_sines(n=128)


@pytest.fixture
def model():
    torch.manual_seed(0)
    return Denoiser()
