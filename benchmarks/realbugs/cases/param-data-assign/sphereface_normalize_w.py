import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SphereFace(nn.Module):
    def __init__(self, feat_dim, num_class, s=30., m=1.5):
        super(SphereFace, self).__init__()
        self.feat_dim = feat_dim
        self.num_class = num_class
        self.s = s
        self.m = m
        self.w = nn.Parameter(torch.Tensor(feat_dim, num_class))
        nn.init.xavier_normal_(self.w)

    def forward(self, x, y):
        with torch.no_grad():
            self.w.data = F.normalize(self.w.data, dim=0)

        cos_theta = F.normalize(x, dim=1).mm(self.w)
        with torch.no_grad():
            m_theta = torch.acos(cos_theta.clamp(-1. + 1e-5, 1. - 1e-5))
            m_theta.scatter_(1, y.view(-1, 1), self.m, reduce='multiply')
            k = (m_theta / math.pi).floor()
            sign = -2 * torch.remainder(k, 2) + 1
            phi_theta = sign * torch.cos(m_theta) - 2. * k
            d_theta = phi_theta - cos_theta

        logits = self.s * (cos_theta + d_theta)
        loss = F.cross_entropy(logits, y)
        return loss


backbone = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 8))
head = SphereFace(feat_dim=8, num_class=5)
lr = 0.1
optimizer = torch.optim.SGD([{'params': backbone.parameters()}, {'params': head.parameters()}], lr=lr)
for step in range(5):
    x = torch.randn(16, 12)
    y = torch.randint(0, 5, (16,))
    optimizer.zero_grad()
    loss = head(backbone(x), y)
    loss.backward()
    optimizer.step()
