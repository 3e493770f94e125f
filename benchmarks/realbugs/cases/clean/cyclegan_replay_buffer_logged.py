"""PyTorch-CycleGAN (aitorzip) train loop, small: ReplayBuffer.push_and_pop of generated images,
three Adam optimizers stepped in turn (G, D_A, D_B), the summed discriminator loss logged per step."""
import itertools
import random

import torch
import torch.nn as nn
from torch.autograd import Variable


class ReplayBuffer():
    def __init__(self, max_size=50):
        self.max_size = max_size
        self.data = []

    def push_and_pop(self, data):
        to_return = []
        for element in data.data:
            element = torch.unsqueeze(element, 0)
            if len(self.data) < self.max_size:
                self.data.append(element)
                to_return.append(element)
            else:
                if random.uniform(0, 1) > 0.5:
                    i = random.randint(0, self.max_size - 1)
                    to_return.append(self.data[i].clone())
                    self.data[i] = element
                else:
                    to_return.append(element)
        return Variable(torch.cat(to_return))


def gen():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1), nn.Tanh())


def disc():
    return nn.Sequential(nn.Conv2d(3, 8, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 4, 1, 1))


random.seed(0)
torch.manual_seed(0)
netG_A2B, netG_B2A, netD_A, netD_B = gen(), gen(), disc(), disc()
criterion_GAN = nn.MSELoss()
criterion_cycle = nn.L1Loss()
criterion_identity = nn.L1Loss()
optimizer_G = torch.optim.Adam(itertools.chain(netG_A2B.parameters(), netG_B2A.parameters()), lr=2e-4, betas=(0.5, 0.999))
optimizer_D_A = torch.optim.Adam(netD_A.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizer_D_B = torch.optim.Adam(netD_B.parameters(), lr=2e-4, betas=(0.5, 0.999))
fake_A_buffer = ReplayBuffer(max_size=4)
fake_B_buffer = ReplayBuffer(max_size=4)
losses = {}
for epoch in range(12):
    real_A = Variable(torch.randn(2, 3, 16, 16))
    real_B = Variable(torch.randn(2, 3, 16, 16))
    optimizer_G.zero_grad()
    same_B = netG_A2B(real_B)
    loss_identity_B = criterion_identity(same_B, real_B) * 5.0
    same_A = netG_B2A(real_A)
    loss_identity_A = criterion_identity(same_A, real_A) * 5.0
    fake_B = netG_A2B(real_A)
    pred_fake = netD_B(fake_B)
    target_real = torch.ones_like(pred_fake)
    target_fake = torch.zeros_like(pred_fake)
    loss_GAN_A2B = criterion_GAN(pred_fake, target_real)
    fake_A = netG_B2A(real_B)
    pred_fake = netD_A(fake_A)
    loss_GAN_B2A = criterion_GAN(pred_fake, target_real)
    recovered_A = netG_B2A(fake_B)
    loss_cycle_ABA = criterion_cycle(recovered_A, real_A) * 10.0
    recovered_B = netG_A2B(fake_A)
    loss_cycle_BAB = criterion_cycle(recovered_B, real_B) * 10.0
    loss_G = loss_identity_A + loss_identity_B + loss_GAN_A2B + loss_GAN_B2A + loss_cycle_ABA + loss_cycle_BAB
    loss_G.backward()
    optimizer_G.step()

    optimizer_D_A.zero_grad()
    pred_real = netD_A(real_A)
    loss_D_real = criterion_GAN(pred_real, target_real)
    fake_A = fake_A_buffer.push_and_pop(fake_A)
    pred_fake = netD_A(fake_A.detach())
    loss_D_fake = criterion_GAN(pred_fake, target_fake)
    loss_D_A = (loss_D_real + loss_D_fake) * 0.5
    loss_D_A.backward()
    optimizer_D_A.step()

    optimizer_D_B.zero_grad()
    pred_real = netD_B(real_B)
    loss_D_real = criterion_GAN(pred_real, target_real)
    fake_B = fake_B_buffer.push_and_pop(fake_B)
    pred_fake = netD_B(fake_B.detach())
    loss_D_fake = criterion_GAN(pred_fake, target_fake)
    loss_D_B = (loss_D_real + loss_D_fake) * 0.5
    loss_D_B.backward()
    optimizer_D_B.step()
    for name, value in {'loss_G': loss_G, 'loss_D': loss_D_A + loss_D_B}.items():
        losses[name] = losses.get(name, 0) + value.item()
print({k: round(v, 3) for k, v in losses.items()})
