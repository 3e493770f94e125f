import torch
import torch.nn as nn


class Opt:
    n_epochs = 2
    batch_size = 8
    lr = 0.00005
    latent_dim = 8
    img_size = 8
    channels = 1
    n_critic = 2
    clip_value = 0.01


opt = Opt()
torch.manual_seed(0)
img_shape = (opt.channels, opt.img_size, opt.img_size)
img_numel = opt.channels * opt.img_size * opt.img_size


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()

        def block(in_feat, out_feat, normalize=True):
            layers = [nn.Linear(in_feat, out_feat)]
            if normalize:
                layers.append(nn.BatchNorm1d(out_feat, 0.8))
            layers.append(nn.LeakyReLU(0.2, inplace=True))
            return layers

        self.model = nn.Sequential(
            *block(opt.latent_dim, 16, normalize=False),
            *block(16, 32),
            nn.Linear(32, img_numel),
            nn.Tanh()
        )

    def forward(self, z):
        img = self.model(z)
        img = img.view(img.shape[0], *img_shape)
        return img


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()

        self.model = nn.Sequential(
            nn.Linear(img_numel, 32),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(32, 16),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(16, 1),
        )

    def forward(self, img):
        img_flat = img.view(img.shape[0], -1)
        validity = self.model(img_flat)
        return validity


generator = Generator()
discriminator = Discriminator()

dataloader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.rand(32, *img_shape) * 2 - 1, torch.zeros(32)),
    batch_size=opt.batch_size,
    shuffle=True,
)

optimizer_G = torch.optim.RMSprop(generator.parameters(), lr=opt.lr)
optimizer_D = torch.optim.RMSprop(discriminator.parameters(), lr=opt.lr)

Tensor = torch.FloatTensor

batches_done = 0
for epoch in range(opt.n_epochs):

    for i, (imgs, _) in enumerate(dataloader):

        real_imgs = imgs.type(Tensor)

        optimizer_D.zero_grad()

        z = Tensor(torch.randn(imgs.shape[0], opt.latent_dim))

        fake_imgs = generator(z).detach()
        loss_D = -torch.mean(discriminator(real_imgs)) + torch.mean(discriminator(fake_imgs))

        loss_D.backward()
        optimizer_D.step()

        for p in discriminator.parameters():
            p.data.clamp_(-opt.clip_value, opt.clip_value)

        if i % opt.n_critic == 0:

            optimizer_G.zero_grad()

            gen_imgs = generator(z)
            loss_G = -torch.mean(discriminator(gen_imgs))

            loss_G.backward()
            optimizer_G.step()

            print(
                "[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G loss: %f]"
                % (epoch, opt.n_epochs, batches_done % len(dataloader), len(dataloader), loss_D.item(), loss_G.item())
            )
        batches_done += 1
