# plain-torch: runs
"""GG010: a GAN whose generator gradients are never zeroed (the discriminator's are)."""
import torch
import torch.nn as nn

criterion = nn.BCEWithLogitsLoss()


def nets():
    torch.manual_seed(0)
    netG = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 2))
    netD = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    return netG, netD


def train(zero_g: bool, iters=4):
    netG, netD = nets()
    optD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    g = torch.Generator().manual_seed(1)
    for _ in range(iters):
        real = torch.randn(8, 2, generator=g) + 2
        noise = torch.randn(8, 3, generator=g)
        # discriminator step (netG's output detached, so no gradient reaches netG here)
        netD.zero_grad()
        fake = netG(noise)
        errD = criterion(netD(real), torch.ones(8, 1)) + criterion(netD(fake.detach()), torch.zeros(8, 1))
        errD.backward()
        optD.step()
        # generator step: errG's backward also adds into netD's gradients, which the next
        # iteration's netD.zero_grad() clears before optD steps again
        if zero_g:
            netG.zero_grad()
        errG = criterion(netD(fake), torch.ones(8, 1))
        errG.backward()
        optG.step()  # expect: GG010 optG
    return netG[0].weight.detach().clone()


def buggy():
    assert not torch.allclose(train(zero_g=False), train(zero_g=True))


def clean():
    train(zero_g=True)
