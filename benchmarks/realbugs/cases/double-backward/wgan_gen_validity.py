import torch
import torch.nn as nn

torch.manual_seed(0)

latent_dim = 8
img_shape = (1, 4, 4)
n_critic = 2
clip_value = 0.01
lr = 0.00005


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()
        self.model = nn.Sequential(nn.Linear(latent_dim, 32), nn.LeakyReLU(0.2, inplace=True), nn.Linear(32, 16), nn.Tanh())

    def forward(self, z):
        img = self.model(z)
        return img.view(img.shape[0], *img_shape)


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.model = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2, inplace=True), nn.Linear(32, 1))

    def forward(self, img):
        return self.model(img.view(img.shape[0], -1))


generator = Generator()
discriminator = Discriminator()
optimizer_G = torch.optim.RMSprop(generator.parameters(), lr=lr)
optimizer_D = torch.optim.RMSprop(discriminator.parameters(), lr=lr)

dataloader = [torch.rand(4, *img_shape) for _ in range(4)]
for i, imgs in enumerate(dataloader):
    real_imgs = imgs
    valid = -torch.ones(imgs.shape[0], 1)

    optimizer_D.zero_grad()
    z = torch.randn(imgs.shape[0], latent_dim)
    fake_imgs = generator(z)
    loss_D = -torch.mean(discriminator(real_imgs)) + torch.mean(discriminator(fake_imgs))
    loss_D.backward()
    optimizer_D.step()

    for p in discriminator.parameters():
        p.data.clamp_(-clip_value, clip_value)

    if i % n_critic == 0:
        optimizer_G.zero_grad()
        gen_validity = discriminator(fake_imgs)
        gen_validity.backward(valid)
        optimizer_G.step()
