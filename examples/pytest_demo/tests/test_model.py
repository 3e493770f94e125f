import torch

from denoise import Denoiser, GatedDenoiser


def test_output_shape(model):
    assert model(torch.zeros(5, 32)).shape == (5, 32)


def test_gated_starts_as_plain_denoiser():
    torch.manual_seed(0)
    plain = Denoiser()
    torch.manual_seed(0)
    gated = GatedDenoiser()
    x = torch.randn(4, 32)
    assert torch.allclose(plain(x), gated(x))
