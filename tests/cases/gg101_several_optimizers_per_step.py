# plain-torch: runs
"""GG101 with three optimizers per training step (a CycleGAN: G, D_A, D_B), each step ending a guard
iteration. A replay buffer of generated images kept across steps (stored detached, as the original
does) and a loss summed from two discriminators' losses after their steps are one step's values, not
a pile; a running sum of that same loss with its graph is one."""
import itertools
import random

import torch
import torch.nn as nn


class ReplayBuffer:
    def __init__(self, max_size=4):
        self.max_size = max_size
        self.data = []

    def push_and_pop(self, data):
        to_return = []
        for element in data.data:
            element = torch.unsqueeze(element, 0)
            if len(self.data) < self.max_size:
                self.data.append(element)
                to_return.append(element)
            elif random.uniform(0, 1) > 0.5:
                i = random.randint(0, self.max_size - 1)
                to_return.append(self.data[i].clone())
                self.data[i] = element
            else:
                to_return.append(element)
        return torch.cat(to_return)


def _gen():
    return nn.Sequential(nn.Conv2d(3, 3, 3, padding=1), nn.Tanh())


def _disc():
    return nn.Sequential(nn.Conv2d(3, 4, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3, 1, 1))


def train(log, steps=10):
    random.seed(0)
    torch.manual_seed(0)
    netG_A2B, netG_B2A, netD_A, netD_B = _gen(), _gen(), _disc(), _disc()
    mse, l1 = nn.MSELoss(), nn.L1Loss()
    optimizer_G = torch.optim.Adam(itertools.chain(netG_A2B.parameters(), netG_B2A.parameters()), lr=2e-4)
    optimizer_D_A = torch.optim.Adam(netD_A.parameters(), lr=2e-4)
    optimizer_D_B = torch.optim.Adam(netD_B.parameters(), lr=2e-4)
    fake_A_buffer, fake_B_buffer = ReplayBuffer(), ReplayBuffer()
    for _ in range(steps):
        real_A, real_B = torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8)
        optimizer_G.zero_grad()
        fake_B, fake_A = netG_A2B(real_A), netG_B2A(real_B)
        pred = netD_B(fake_B)
        ones, zeros = torch.ones_like(pred), torch.zeros_like(pred)
        loss_G = (mse(pred, ones) + mse(netD_A(fake_A), ones)
                  + 10 * (l1(netG_B2A(fake_B), real_A) + l1(netG_A2B(fake_A), real_B)))
        loss_G.backward()
        optimizer_G.step()
        optimizer_D_A.zero_grad()
        fake_A = fake_A_buffer.push_and_pop(fake_A)
        loss_D_A = 0.5 * (mse(netD_A(real_A), ones) + mse(netD_A(fake_A.detach()), zeros))
        loss_D_A.backward()
        optimizer_D_A.step()
        optimizer_D_B.zero_grad()
        fake_B = fake_B_buffer.push_and_pop(fake_B)
        loss_D_B = 0.5 * (mse(netD_B(real_B), ones) + mse(netD_B(fake_B.detach()), zeros))
        loss_D_B.backward()
        optimizer_D_B.step()
        loss_D = loss_D_A + loss_D_B  # both discriminators, for the log
        log(loss_G, loss_D)
    return fake_A_buffer


class History:
    def __init__(self):
        self.total_D = 0

    def add(self, loss_G, loss_D):
        self.total_D = self.total_D + loss_D  # expect: GG101 history.total_D


class ItemHistory:
    def __init__(self):
        self.losses = {}

    def add(self, loss_G, loss_D):
        for name, value in {"loss_G": loss_G, "loss_D": loss_D}.items():
            self.losses[name] = self.losses.get(name, 0) + value.item()


def buggy():
    history = History()
    train(history.add)
    assert history.total_D.grad_fn is not None  # ten steps' graphs hang on it


def clean():
    history = ItemHistory()
    buffer = train(history.add)
    assert all(t.grad_fn is None for t in buffer.data) and isinstance(history.losses["loss_D"], float)
