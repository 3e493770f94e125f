import torch
import torch.nn as nn
from torch.optim import SGD

torch.manual_seed(0)

enc = nn.Sequential(nn.Linear(20, 8), nn.Sigmoid())
dec = nn.Sequential(nn.Linear(8, 20), nn.Sigmoid())
optim_rec = SGD(list(enc.parameters()) + list(dec.parameters()), lr=0.1)
smoothL1 = nn.SmoothL1Loss()

for epoch in range(5):
    x = torch.rand(16, 20)
    y = enc(x)
    x_ = dec(y)
    loss = smoothL1(x, x_)
    optim_rec.zero_grad()
    loss.backward()
    optim_rec.step()
