# plain-torch: runs
"""GG008: a learnable threshold used through a comparison never gets a gradient."""
import torch


def buggy():
    torch.manual_seed(0)
    signal = torch.linspace(-2, 2, 50)
    wanted = (signal > 0.5).float()
    threshold = torch.zeros((), requires_grad=True)
    gain = torch.ones((), requires_grad=True)
    opt = torch.optim.Adam([threshold, gain], lr=0.05)
    for _ in range(3):
        opt.zero_grad()
        gate = (signal > threshold).float()
        loss = ((gate * gain - wanted) ** 2).mean()
        loss.backward()
        opt.step()  # expect: GG008 threshold
    assert threshold.grad is None and gain.grad is not None


def clean():
    torch.manual_seed(0)
    signal = torch.linspace(-2, 2, 50)
    wanted = (signal > 0.5).float()
    threshold = torch.zeros((), requires_grad=True)
    gain = torch.ones((), requires_grad=True)
    opt = torch.optim.Adam([threshold, gain], lr=0.05)
    for _ in range(3):
        opt.zero_grad()
        gate = torch.sigmoid((signal - threshold) * 10)
        loss = ((gate * gain - wanted) ** 2).mean()
        loss.backward()
        opt.step()
