# plain-torch: raises "backward through the graph a second time"
"""GG003: a GAN discriminator step on a fake that was not detached, then the generator step."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def nets():
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    D = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    return G, D, torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())


def buggy():
    G, D, opt_g, opt_d = nets()
    real = torch.randn(4, 2)
    fake = G(torch.randn(4, 3))
    opt_d.zero_grad()
    d_loss = F.binary_cross_entropy_with_logits(D(real), torch.ones(4, 1)) + \
        F.binary_cross_entropy_with_logits(D(fake), torch.zeros(4, 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = F.binary_cross_entropy_with_logits(D(fake), torch.ones(4, 1))
    g_loss.backward()  # expect: GG003 fake
    opt_g.step()


def clean():
    G, D, opt_g, opt_d = nets()
    for _ in range(2):
        real = torch.randn(4, 2)
        fake = G(torch.randn(4, 3))
        opt_d.zero_grad()
        d_loss = F.binary_cross_entropy_with_logits(D(real), torch.ones(4, 1)) + \
            F.binary_cross_entropy_with_logits(D(fake.detach()), torch.zeros(4, 1))
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        F.binary_cross_entropy_with_logits(D(fake), torch.ones(4, 1)).backward()
        opt_g.step()
