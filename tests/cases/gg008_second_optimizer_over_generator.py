# plain-torch: runs
"""GG008 / GG011: a GAN's discriminator optimizer built over the generator's parameters again.
A discriminator step trains the discriminator, which no optimizer holds, and its optimizer steps
on the generator's empty gradients: the findings point at the line that builds that optimizer
(tests/test_optimizer_sites.py). Don't trigger: each optimizer over its own network."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def nets():
    torch.manual_seed(0)
    netG = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    netD = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    return netG, netD


def data():
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(6, 2, generator=g) + 2, torch.randn(6, 4, generator=g)) for _ in range(3)]


def d_step(netD, optD, real, fake):
    optD.zero_grad()
    d_real = netD(real)
    d_loss = (F.binary_cross_entropy_with_logits(d_real, torch.ones_like(d_real))
              + F.binary_cross_entropy_with_logits(netD(fake.detach()), torch.zeros(6, 1)))
    d_loss.backward()
    optD.step()  # expect: GG008 netG, GG011 netD


def g_step(netD, optG, fake):
    optG.zero_grad()
    g_out = netD(fake)
    F.binary_cross_entropy_with_logits(g_out, torch.ones_like(g_out)).backward()
    optG.step()


def discriminator_first(netG, netD, optG, optD):
    for real, z in data():
        fake = netG(z)
        d_step(netD, optD, real, fake)
        g_step(netD, optG, fake)


def generator_first(netG, netD, optG, optD):
    for real, z in data():
        fake = netG(z)
        g_step(netD, optG, fake)
        d_step(netD, optD, real, fake)


def buggy():
    netG, netD = nets()
    optG = torch.optim.Adam(netG.parameters(), lr=1e-3)
    optD = torch.optim.Adam(netG.parameters(), lr=1e-3)
    discriminator_first(netG, netD, optG, optD)
    assert not any(p is q for g in optD.param_groups for p in g["params"] for q in netD.parameters())
    netG, netD = nets()
    optG = torch.optim.Adam(netG.parameters(), lr=1e-3)
    optD = torch.optim.Adam(netG.parameters(), lr=1e-3)
    generator_first(netG, netD, optG, optD)


def clean():
    for order in (discriminator_first, generator_first):
        netG, netD = nets()
        optG = torch.optim.Adam(netG.parameters(), lr=1e-3)
        optD = torch.optim.Adam(netD.parameters(), lr=1e-3)
        order(netG, netD, optG, optD)
