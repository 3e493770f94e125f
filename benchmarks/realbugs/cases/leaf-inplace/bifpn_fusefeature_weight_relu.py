import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class Conv(nn.Module):
    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Fusefeature(nn.Module):
    def __init__(self, e=1e-4):
        super(Fusefeature, self).__init__()
        self.e = e
        self.weight = nn.Parameter(torch.ones(2, dtype=torch.float32), requires_grad=True)
        self.weight_relu = nn.ReLU()
        self.swish = Swish()

    def forward(self, x):
        weight = self.weight_relu(self.weight)
        weight = weight / (torch.sum(weight, dim=0) + self.e)
        return self.swish(weight[0] * x[0] + weight[1] * x[1])


class Model(nn.Module):
    def __init__(self, nc=3):
        super().__init__()
        self.stem = Conv(3, 8, 3, 2)
        self.down = Conv(8, 8, 3, 2)
        self.lateral = Conv(8, 8, 1)
        self.fuse = Fusefeature()
        self.detect = nn.Conv2d(8, nc + 5, 1)

    def forward(self, x):
        p3 = self.stem(x)
        p4 = self.down(p3)
        up = F.interpolate(self.lateral(p4), size=p3.shape[2:], mode='nearest')
        return self.detect(self.fuse([p3, up]))


def initialize_weights(model):
    for m in model.modules():
        t = type(m)
        if t is nn.Conv2d:
            pass
        elif t is nn.BatchNorm2d:
            m.eps = 1e-3
            m.momentum = 0.03
        elif t in [nn.Hardswish, nn.LeakyReLU, nn.ReLU, nn.ReLU6]:
            m.inplace = True


model = Model()
initialize_weights(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.937, nesterov=True)
for i in range(2):
    imgs = torch.randn(2, 3, 32, 32)
    targets = torch.randn(2, 8, 16, 16)
    pred = model(imgs)
    loss = F.mse_loss(pred, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
