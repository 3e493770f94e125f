# plain-torch: raises "modified by an inplace operation"
"""GG005: a GAN reuses the discriminator's output on the fakes after the discriminator stepped."""
import torch
import torch.nn as nn

bce = nn.BCEWithLogitsLoss()


def models():
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 6))
    D = nn.Sequential(nn.Linear(6, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    return G, D, torch.optim.Adam(G.parameters(), 2e-4), torch.optim.Adam(D.parameters(), 2e-4)


def buggy():
    G, D, opt_g, opt_d = models()
    real = torch.randn(8, 6)
    fake = G(torch.randn(8, 4))
    d_real, d_fake = D(real), D(fake)
    loss_d = bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))
    opt_d.zero_grad()
    loss_d.backward(retain_graph=True)
    opt_d.step()  # expect: GG005 d_fake
    loss_g = bce(d_fake, torch.ones_like(d_fake))
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()


def clean():
    G, D, opt_g, opt_d = models()
    for _ in range(3):
        real = torch.randn(8, 6)
        fake = G(torch.randn(8, 4))
        d_real, d_fake = D(real), D(fake.detach())
        loss_d = bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
        d_out = D(fake)  # the discriminator again, after its step
        loss_g = bce(d_out, torch.ones_like(d_out))
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
