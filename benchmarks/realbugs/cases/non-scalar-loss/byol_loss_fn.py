import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


def loss_fn(x, y):
    x = F.normalize(x, dim=-1, p=2)
    y = F.normalize(y, dim=-1, p=2)
    return 2 - 2 * (x * y).sum(dim=-1)


class MLP(nn.Module):
    def __init__(self, dim, hidden, out):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, out))

    def forward(self, x):
        return self.net(x)


class BYOL(nn.Module):
    def __init__(self, dim=16, proj=8):
        super().__init__()
        self.online_encoder = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), MLP(32, 32, proj))
        self.online_predictor = MLP(proj, 16, proj)
        self.target_encoder = copy.deepcopy(self.online_encoder)
        for p in self.target_encoder.parameters():
            p.requires_grad = False

    def forward(self, x1, x2):
        p1 = self.online_predictor(self.online_encoder(x1))
        p2 = self.online_predictor(self.online_encoder(x2))
        with torch.no_grad():
            z1 = self.target_encoder(x1)
            z2 = self.target_encoder(x2)
        loss = loss_fn(p1, z2.detach()) + loss_fn(p2, z1.detach())
        return loss


def train(net, loader, optimizer, epoch):
    net.train()
    for x in loader:
        x1 = x + 0.1 * torch.randn_like(x)
        x2 = x + 0.1 * torch.randn_like(x)
        loss = net(x1, x2)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(epoch, loss)


torch.manual_seed(0)
net = BYOL()
optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
loader = [torch.randn(8, 16) for _ in range(2)]
for epoch in range(2):
    train(net, loader, optimizer, epoch)
