# plain-torch: runs
"""GG002: arguments of a loss passed in the wrong order. A noise-prediction step written
`loss_fn(noise, eps_pred)` with nn.SmoothL1Loss (the annotated-diffusion order) is symmetric:
value and gradient are the same either way, so it is reported as info only; a BCE-with-logits
call given the labels as logits and the logits as targets computes another loss (an error)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    denoiser = nn.Sequential(nn.Linear(4, 16), nn.SiLU(), nn.Linear(16, 4))
    clf = nn.Linear(4, 3)
    opt = torch.optim.Adam(list(denoiser.parameters()) + list(clf.parameters()), lr=1e-3)
    return denoiser, clf, opt


def batches():
    g = torch.Generator().manual_seed(3)
    for _ in range(3):
        x0 = torch.randn(8, 4, generator=g)
        yield x0, torch.randn(8, 4, generator=g), (torch.rand(8, 3, generator=g) > 0.5).float()


def buggy():
    denoiser, clf, opt = setup()
    loss_fn = nn.SmoothL1Loss()
    for x0, noise, labels in batches():
        x_noisy = 0.8 * x0 + 0.6 * noise
        eps_pred = denoiser(x_noisy)
        logits = clf(x0)
        loss = loss_fn(noise, eps_pred)  # expect: GG002 eps_pred
        loss = loss + F.binary_cross_entropy_with_logits(labels, logits)  # expect: GG002 logits
        opt.zero_grad()
        loss.backward()
        opt.step()


def clean():
    denoiser, clf, opt = setup()
    loss_fn = nn.SmoothL1Loss()
    for x0, noise, labels in batches():
        x_noisy = 0.8 * x0 + 0.6 * noise
        eps_pred = denoiser(x_noisy)
        logits = clf(x0)
        loss = loss_fn(eps_pred, noise) + F.binary_cross_entropy_with_logits(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
