# plain-torch: runs
"""GG008 (warning): an optimizer steps after a backward while every parameter it holds is frozen:
the discriminator was frozen for the generator update and never switched back, so each later
discriminator step (its loss still has a graph, through the generator) updates nothing."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def batches(n=4):
    g = torch.Generator().manual_seed(3)
    for _ in range(n):
        yield torch.randn(6, 4, generator=g), torch.randn(6, 5, generator=g)


def buggy():
    torch.manual_seed(0)
    gen = nn.Linear(4, 5)
    disc = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(disc.parameters(), lr=1e-3)
    before = None
    for i, (z, real) in enumerate(batches()):
        opt_d.zero_grad()
        d_loss = F.softplus(disc(gen(z))).mean() + F.softplus(-disc(real)).mean()
        d_loss.backward()
        if i == 1:
            before = disc[0].weight.detach().clone()
        opt_d.step()  # expect: GG008 disc

        disc.requires_grad_(False)
        opt_g.zero_grad()
        F.softplus(-disc(gen(z))).mean().backward()
        opt_g.step()
    assert torch.equal(disc[0].weight, before)


def clean():
    torch.manual_seed(0)
    gen = nn.Linear(4, 5)
    disc = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(disc.parameters(), lr=1e-3)
    for z, real in batches():
        disc.requires_grad_(True)
        opt_d.zero_grad()
        d_loss = F.softplus(disc(gen(z).detach())).mean() + F.softplus(-disc(real)).mean()
        d_loss.backward()
        opt_d.step()

        disc.requires_grad_(False)
        opt_g.zero_grad()
        F.softplus(-disc(gen(z))).mean().backward()
        opt_g.step()
