import argparse
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Generator(nn.Module):
    def __init__(self, latent_dim=8, size=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(latent_dim, 32), nn.LeakyReLU(0.2), nn.Linear(32, size))

    def forward(self, stylecode):
        return self.net(stylecode)


class Encoder(nn.Module):
    def __init__(self, latent_dim=8, size=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(size, 32), nn.LeakyReLU(0.2), nn.Linear(32, latent_dim))

    def forward(self, img):
        return self.net(img)


class Discriminator(nn.Module):
    def __init__(self, size=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(size, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, img):
        return self.net(img)


class Model(nn.Module):
    def __init__(self, batch=4, latent_dim=8):
        super().__init__()
        self.batch = batch
        self.latent_dim = latent_dim
        self.generator = Generator(latent_dim)
        self.encoder = Encoder(latent_dim)
        self.discriminator = Discriminator()

    def forward(self, real_img, mode):
        if mode == "G":
            z = torch.randn(self.batch, self.latent_dim)
            fake_img = self.generator(z)
            fake_pred = self.discriminator(fake_img)
            adv_loss = F.softplus(-fake_pred)
            fake_stylecode = self.encoder(fake_img)
            w_rec_loss = F.mse_loss(fake_stylecode, z, reduction="none").mean(1)
            return adv_loss, w_rec_loss, fake_stylecode


args = argparse.Namespace(lambda_adv_loss=1.0, lambda_w_rec_loss=1.0, iter=3)
model = Model()
g_optim = torch.optim.Adam(model.generator.parameters(), lr=2e-3)
e_optim = torch.optim.Adam(model.encoder.parameters(), lr=2e-3)

for i in range(args.iter):
    adv_loss, w_rec_loss, stylecode = model(None, "G")
    adv_loss = adv_loss.mean()
    w_rec_loss = w_rec_loss.mean()
    g_loss = adv_loss * args.lambda_adv_loss

    g_optim.zero_grad()
    e_optim.zero_grad()
    g_loss.backward()
    (w_rec_loss * args.lambda_w_rec_loss).backward()
    g_optim.step()
    e_optim.step()
