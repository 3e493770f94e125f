import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


class ConvBlock(nn.Sequential):
    def __init__(self, in_channel, out_channel, ker_size=3, padd=0, stride=1):
        super().__init__()
        self.add_module('conv', nn.Conv2d(in_channel, out_channel, kernel_size=ker_size, stride=stride, padding=padd))
        self.add_module('norm', nn.BatchNorm2d(out_channel))
        self.add_module('LeakyRelu', nn.LeakyReLU(0.2, inplace=True))


class WDiscriminator(nn.Module):
    def __init__(self, nc=3, nfc=8):
        super().__init__()
        self.head = ConvBlock(nc, nfc, padd=1)
        self.tail = nn.Conv2d(nfc, 1, kernel_size=3, padding=1)

    def forward(self, x):
        return self.tail(self.head(x))


class GeneratorConcatSkip2CleanAdd(nn.Module):
    def __init__(self, nc=3, nfc=8):
        super().__init__()
        self.head = ConvBlock(nc, nfc, padd=1)
        self.tail = nn.Sequential(nn.Conv2d(nfc, nc, kernel_size=3, padding=1), nn.Tanh())

    def forward(self, x, y):
        x = self.tail(self.head(x))
        return x + y


def calc_gradient_penalty(netD, real_data, fake_data, LAMBDA):
    alpha = torch.rand(1, 1).expand(real_data.size())
    interpolates = alpha * real_data + ((1 - alpha) * fake_data)
    interpolates = torch.autograd.Variable(interpolates, requires_grad=True)
    disc_interpolates = netD(interpolates)
    gradients = torch.autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                                    grad_outputs=torch.ones(disc_interpolates.size()),
                                    create_graph=True, retain_graph=True, only_inputs=True)[0]
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA


def train_single_scale(netD, netG, real, niter=2, Dsteps=3, Gsteps=3, alpha=10, lambda_grad=0.1):
    optimizerD = optim.Adam(netD.parameters(), lr=0.0005, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=0.0005, betas=(0.5, 0.999))
    z_opt = torch.randn(real.shape)
    prev = torch.zeros(real.shape)
    z_prev = torch.zeros(real.shape)
    noise_amp = 1.0

    for epoch in range(niter):
        noise_ = torch.randn(real.shape)

        for j in range(Dsteps):
            netD.zero_grad()
            output = netD(real)
            errD_real = -output.mean()
            errD_real.backward(retain_graph=True)

            noise = noise_amp * noise_ + prev
            fake = netG(noise.detach(), prev)
            output = netD(fake.detach())
            errD_fake = output.mean()
            errD_fake.backward(retain_graph=True)

            gradient_penalty = calc_gradient_penalty(netD, real, fake, lambda_grad)
            gradient_penalty.backward()
            optimizerD.step()

        for j in range(Gsteps):
            netG.zero_grad()
            output = netD(fake)
            errG = -output.mean()
            errG.backward(retain_graph=True)
            loss = nn.MSELoss()
            Z_opt = noise_amp * z_opt + z_prev
            rec_loss = alpha * loss(netG(Z_opt.detach(), z_prev), real)
            rec_loss.backward(retain_graph=True)
            optimizerG.step()
    return z_opt, netG


netD = WDiscriminator()
netG = GeneratorConcatSkip2CleanAdd()
real = torch.rand(1, 3, 12, 12) * 2 - 1
train_single_scale(netD, netG, real)
