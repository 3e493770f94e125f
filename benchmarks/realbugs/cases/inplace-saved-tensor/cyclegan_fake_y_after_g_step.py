import itertools

import torch as t
import torch.nn as nn

t.manual_seed(0)


class ResnetGenerator(nn.Module):
    def __init__(self, nc=3, ngf=8):
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(nc, ngf, 3, padding=1), nn.InstanceNorm2d(ngf), nn.ReLU(True),
                                   nn.Conv2d(ngf, nc, 3, padding=1), nn.Tanh())

    def forward(self, x):
        return self.model(x)


class NLayerDiscriminator(nn.Module):
    def __init__(self, nc=3, ndf=8):
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(nc, ndf, 4, 2, 1), nn.LeakyReLU(0.2, True), nn.Conv2d(ndf, 1, 4, 1, 1))

    def forward(self, x):
        return self.model(x)


class GANLoss(nn.Module):
    def __init__(self, gan_mode='lsgan'):
        super().__init__()
        self.loss = nn.MSELoss()

    def __call__(self, prediction, target_is_real):
        target = t.ones_like(prediction) if target_is_real else t.zeros_like(prediction)
        return self.loss(prediction, target)


netG_x = ResnetGenerator()
netG_y = ResnetGenerator()
netD_x = NLayerDiscriminator()
netD_y = NLayerDiscriminator()
optimizer_g = t.optim.Adam(itertools.chain(netG_x.parameters(), netG_y.parameters()), lr=2e-4, betas=(0.5, 0.999))
optimizer_d = t.optim.Adam(itertools.chain(netD_x.parameters(), netD_y.parameters()), lr=2e-4, betas=(0.5, 0.999))
criterionGAN = GANLoss(gan_mode='lsgan')
criterionCycle = nn.L1Loss()
criterionIdt = nn.L1Loss()
lambda_X = 10.0
lambda_Y = 10.0
lambda_identity = 0.5

dataset = [{'A': t.randn(1, 3, 16, 16), 'B': t.randn(1, 3, 16, 16)} for _ in range(2)]
for epoch in range(1):
    for i, data in enumerate(dataset):
        real_x = data['A']
        real_y = data['B']

        optimizer_g.zero_grad()
        fake_y = netG_x(real_x)
        prediction = netD_x(fake_y)
        loss_G_X = criterionGAN(prediction, True)
        x_hat = netG_y(fake_y)
        loss_cycle_X = criterionCycle(x_hat, real_x) * lambda_X
        idt_x = netG_x(real_y)
        loss_idt_x = criterionIdt(idt_x, real_y) * lambda_Y * lambda_identity
        loss_X = loss_G_X + loss_cycle_X + loss_idt_x
        loss_X.backward(retain_graph=True)
        optimizer_g.step()

        optimizer_g.zero_grad()
        fake_x = netG_y(real_y)
        prediction = netD_y(fake_x)
        loss_G_Y = criterionGAN(prediction, True)
        y_hat = netG_x(fake_x)
        loss_cycle_Y = criterionCycle(y_hat, real_y) * lambda_Y
        idt_y = netG_y(real_x)
        loss_idt_y = criterionIdt(idt_y, real_x) * lambda_X * lambda_identity
        loss_Y = loss_G_Y + loss_cycle_Y + loss_idt_y
        loss_Y.backward(retain_graph=True)
        optimizer_g.step()

        optimizer_d.zero_grad()
        pred_real = netD_x(real_y)
        loss_D_x_real = criterionGAN(pred_real, True)
        pred_fake = netD_x(fake_y)
        loss_D_x_fake = criterionGAN(pred_fake, False)
        loss_D_x = (loss_D_x_real + loss_D_x_fake) * 0.5
        loss_D_x.backward()
        optimizer_d.step()

        optimizer_d.zero_grad()
        pred_real = netD_y(real_x)
        loss_D_y_real = criterionGAN(pred_real, True)
        pred_fake = netD_y(fake_x)
        loss_D_y_fake = criterionGAN(pred_fake, False)
        loss_D_y = (loss_D_y_real + loss_D_y_fake) * 0.5
        loss_D_y.backward()
        optimizer_d.step()
