import torch
import torch.nn as nn
from torch.optim.optimizer import Optimizer

torch.manual_seed(0)


def unitwise_norm(x):
    if x.ndim <= 1:
        dim = 0
        keepdim = False
    else:
        dim = tuple(range(1, x.ndim))
        keepdim = True
    return torch.sum(x ** 2, dim=dim, keepdim=keepdim) ** 0.5


class SGD_AGC(Optimizer):
    def __init__(self, params, lr, momentum=0, clipping=1e-2, eps=1e-3):
        defaults = dict(lr=lr, momentum=momentum, clipping=clipping, eps=eps)
        super(SGD_AGC, self).__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group['params']:
                param_norm = torch.max(unitwise_norm(p), torch.tensor(group['eps']))
                grad_norm = unitwise_norm(p.grad)
                max_norm = param_norm * group['clipping']
                trigger = grad_norm > max_norm
                clipped_grad = p.grad * (max_norm / torch.max(grad_norm, torch.tensor(1e-6)))
                p.grad.data.copy_(torch.where(trigger, clipped_grad, p.grad))
                p.add_(p.grad, alpha=-group['lr'])


class TinyResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.layer1 = nn.Conv2d(8, 8, 3, padding=1)
        self.layer2 = nn.Conv2d(8, 16, 3, padding=1)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16, 1000)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.relu(self.layer2(self.relu(self.layer1(x))))
        return self.fc(self.flatten(self.avgpool(x)))


net = TinyResNet()
num_ftrs = net.fc.in_features
net.fc = nn.Linear(num_ftrs, 13)
ct = 0
for name, child in net.named_children():
    ct += 1
    if ct < 4:
        for name2, params in child.named_parameters():
            params.requires_grad = False

criterion = nn.CrossEntropyLoss()
optim_agc = SGD_AGC(net.parameters(), 1e-3, momentum=0.9)

for batch_idx in range(3):
    data_ = torch.randn(4, 3, 8, 8)
    target_ = torch.randint(0, 13, (4,))
    optim_agc.zero_grad()
    outputs = net(data_)
    loss = criterion(outputs, target_)
    loss.backward()
    optim_agc.step()
