import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import autograd, optim

torch.manual_seed(0)


class GeneratorSeg(nn.Module):
    def __init__(self, latent, size, seg_dim):
        super().__init__()
        self.style = nn.Sequential(nn.Linear(latent, 32), nn.LeakyReLU(0.2))
        self.to_rgb = nn.Linear(32, size)
        self.to_seg = nn.Linear(32, seg_dim)

    def forward(self, noise):
        w = self.style(noise)
        return torch.tanh(self.to_rgb(w)), torch.softmax(self.to_seg(w), dim=1)


class Discriminator(nn.Module):
    def __init__(self, input_dim):
        super().__init__()
        self.convs = nn.Sequential(nn.Linear(input_dim, 32), nn.Softplus(), nn.Linear(32, 1))

    def forward(self, x):
        return self.convs(x)


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def d_logistic_loss(real_pred, fake_pred):
    return F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()


def d_r1_loss(real_pred, real_img):
    grad_real, = autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    return grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()


def g_nonsaturating_loss(fake_pred):
    return F.softplus(-fake_pred).mean()


batch, latent, size, seg_dim = 8, 16, 24, 4
r1, d_reg_every = 10.0, 4

generator = GeneratorSeg(latent, size, seg_dim)
discriminator_img = Discriminator(size)
discriminator_seg = Discriminator(size + seg_dim)

d_reg_ratio = d_reg_every / (d_reg_every + 1)
g_optim = optim.Adam(generator.parameters(), lr=0.002, betas=(0.0, 0.99))
d_img_optim = optim.Adam(discriminator_img.parameters(), lr=0.002 * d_reg_ratio, betas=(0.0, 0.99 ** d_reg_ratio))
d_seg_optim = optim.Adam(discriminator_seg.parameters(), lr=0.002 * d_reg_ratio, betas=(0.0, 0.99 ** d_reg_ratio))

for i in range(9):
    real_img = torch.randn(batch, size)
    seg_img = torch.randn(batch, size)
    seg_mask = torch.softmax(torch.randn(batch, seg_dim), dim=1)

    requires_grad(generator, False)
    requires_grad(discriminator_img, True)
    requires_grad(discriminator_seg, False)

    fake_img, fake_seg = generator(torch.randn(batch, latent))
    fake_seg = fake_seg.detach()
    fake_img_pred = discriminator_img(fake_img)
    real_img_pred = discriminator_img(real_img)
    d_img_loss = d_logistic_loss(real_img_pred, fake_img_pred)

    discriminator_img.zero_grad()
    d_img_loss.backward()
    d_img_optim.step()

    requires_grad(generator, False)
    requires_grad(discriminator_img, False)
    requires_grad(discriminator_seg, True)

    fake_img, fake_seg = generator(torch.randn(batch, latent))
    fake_seg_pred = discriminator_seg(torch.cat([fake_img, fake_seg], dim=1))
    real_seg_pred = discriminator_seg(torch.cat([seg_img, seg_mask], dim=1))
    d_seg_loss = (F.relu(1.0 + fake_seg_pred).mean() + F.relu(1.0 - real_seg_pred).mean()) / 2.0

    discriminator_seg.zero_grad()
    d_seg_loss.backward()
    d_seg_optim.step()

    d_regularize = i % d_reg_every == 0

    if d_regularize:
        real_img.requires_grad = True
        real_pred = discriminator_img(real_img)
        r1_img_loss = d_r1_loss(real_pred, real_img)

        discriminator_img.zero_grad()
        (r1 / 2 * r1_img_loss * d_reg_every + 0 * real_pred[0]).backward()

        d_img_optim.step()

        real_img_seg = torch.cat([seg_img, seg_mask], dim=1)
        real_img_seg.requires_grad = True
        real_pred = discriminator_seg(real_img_seg)
        r1_seg_loss = d_r1_loss(real_pred, real_img_seg)

        discriminator_seg.zero_grad()
        (r1 / 2 * r1_seg_loss * d_reg_every + 0 * real_pred[0]).backward()

        d_seg_optim.step()

    requires_grad(generator, True)
    requires_grad(discriminator_img, False)
    requires_grad(discriminator_seg, False)

    fake_img, fake_seg = generator(torch.randn(batch, latent))
    fake_img_pred = discriminator_img(fake_img)
    fake_seg_pred = discriminator_seg(torch.cat([fake_img.detach(), fake_seg], dim=1))
    g_loss = g_nonsaturating_loss(fake_img_pred) + (-fake_seg_pred.mean())

    generator.zero_grad()
    g_loss.backward()
    g_optim.step()

    print(i, d_img_loss.item(), d_seg_loss.item(), g_loss.item())
