import torch

from denoise import GatedDenoiser, evaluate, train


def test_loss_decreases(model, loader):
    history = train(model, loader, epochs=3)
    assert history[-1] < history[0]


def test_gradient_accumulation(model, loader):
    before = evaluate(model, loader)
    train(model, loader, epochs=2, accumulate=2)
    assert evaluate(model, loader) < before


def test_gated_model_learns(loader):
    torch.manual_seed(0)
    model = GatedDenoiser()
    history = train(model, loader, epochs=3)
    assert history[-1] < history[0]
