import torch
import torch.nn as nn
import torch.optim as optim
from torch.nn.utils import spectral_norm, weight_norm, remove_weight_norm

torch.manual_seed(0)
Z_dim = 16
channels = 3
leak = 0.1
w_g = 4


class Generator(nn.Module):
    def __init__(self, z_dim):
        super(Generator, self).__init__()
        self.z_dim = z_dim
        self.model = nn.Sequential(
            nn.ConvTranspose2d(z_dim, 32, 4, stride=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.ConvTranspose2d(32, 16, kernel_size=4, stride=2, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            weight_norm(nn.ConvTranspose2d(16, channels, kernel_size=3, stride=1, padding=1)),
            nn.Tanh())

    def forward(self, z):
        return self.model(z.view(-1, self.z_dim, 1, 1))


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.conv1 = spectral_norm(nn.Conv2d(channels, 16, 3, stride=1, padding=(1, 1)))
        self.conv2 = spectral_norm(nn.Conv2d(16, 16, 4, stride=2, padding=(1, 1)))
        self.conv3 = spectral_norm(nn.Conv2d(16, 32, 3, stride=1, padding=(1, 1)))
        self.fc = spectral_norm(nn.Linear(w_g * w_g * 32, 1))

    def forward(self, x):
        m = x
        m = nn.LeakyReLU(leak)(self.conv1(m))
        m = nn.LeakyReLU(leak)(self.conv2(m))
        m = nn.LeakyReLU(leak)(self.conv3(m))
        return self.fc(m.view(-1, w_g * w_g * 32))


discriminator = Discriminator()
generator = Generator(Z_dim)
optim_disc = optim.Adam(filter(lambda p: p.requires_grad, discriminator.parameters()), lr=2e-4, betas=(0.0, 0.9))
optim_gen = optim.Adam(generator.parameters(), lr=2e-4, betas=(0.0, 0.9))
disc_iters = 2
batch_size = 8
loader = [torch.rand(batch_size, channels, 8, 8) * 2 - 1 for _ in range(4)]


def train(epoch):
    for batch_idx, data in enumerate(loader):
        z = torch.randn(batch_size, Z_dim)
        # update discriminator
        for _ in range(disc_iters):
            z = torch.randn(batch_size, Z_dim)
            optim_disc.zero_grad()
            optim_gen.zero_grad()
            disc_loss = nn.ReLU()(1.0 - discriminator(data)).mean() + nn.ReLU()(1.0 + discriminator(generator(z))).mean()
            disc_loss.backward()
            optim_disc.step()
        z = torch.randn(batch_size, Z_dim)
        # update generator
        optim_disc.zero_grad()
        optim_gen.zero_grad()
        gen_loss = -discriminator(generator(z)).mean()
        gen_loss.backward()
        optim_gen.step()
    print('disc loss', disc_loss.item(), 'gen loss', gen_loss.item())


for epoch in range(2):
    train(epoch)
remove_weight_norm(generator.model[6])
with torch.no_grad():
    print(generator(torch.randn(2, Z_dim)).shape)
