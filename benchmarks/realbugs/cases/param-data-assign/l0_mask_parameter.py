import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

torch.manual_seed(0)


def hard_sigmoid(x):
    return torch.min(torch.max(x, torch.zeros_like(x)), torch.ones_like(x))


class _L0Norm(nn.Module):
    def __init__(self, origin, loc_mean=0, loc_sdev=0.01, beta=2 / 3, gamma=-0.1, zeta=1.1, fix_temp=True):
        super(_L0Norm, self).__init__()
        self._origin = origin
        self._size = self._origin.weight.size()
        self.loc = nn.Parameter(torch.zeros(self._size).normal_(loc_mean, loc_sdev))
        self.temp = beta if fix_temp else nn.Parameter(torch.zeros(1).fill_(beta))
        self.register_buffer("uniform", torch.zeros(self._size))
        self.gamma = gamma
        self.zeta = zeta
        self.gamma_zeta_ratio = torch.log(torch.tensor(-gamma / zeta)).item()
        self.mask = nn.Parameter(torch.zeros(self._size), requires_grad=False)

    def _get_mask(self):
        if self.training:
            self.uniform.uniform_()
            u = Variable(self.uniform)
            s = torch.sigmoid((torch.log(u) - torch.log(1 - u) + self.loc) / self.temp)
            s = s * (self.zeta - self.gamma) + self.gamma
            penalty = torch.sigmoid(self.loc - self.temp * self.gamma_zeta_ratio).sum()
        else:
            s = torch.sigmoid(self.loc) * (self.zeta - self.gamma) + self.gamma
            penalty = 0
        self.mask.data = hard_sigmoid(s)
        return self.mask, penalty


class L0Linear(_L0Norm):
    def __init__(self, in_features, out_features, bias=True, **kwargs):
        super(L0Linear, self).__init__(nn.Linear(in_features, out_features, bias=bias), **kwargs)

    def forward(self, input):
        mask, penalty = self._get_mask()
        return F.linear(input, self._origin.weight * mask, self._origin.bias), penalty


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = L0Linear(20, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        h, penalty = self.fc1(x)
        return self.fc2(F.relu(h)), penalty


model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
reg = 1e-3
X = torch.randn(32, 20)
y = torch.randint(0, 4, (32,))
for epoch in range(5):
    model.train()
    optimizer.zero_grad()
    output, penalty = model(X)
    loss = F.cross_entropy(output, y) + reg * penalty
    loss.backward()
    optimizer.step()
    print(epoch, loss.item())
