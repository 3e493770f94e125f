import torch
import torch.nn as nn
import torch.utils.checkpoint as cp

torch.manual_seed(0)


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Conv2d(inplanes, planes, 1, bias=False) if inplanes != planes else nn.Identity()

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class SublinearSequential(nn.Sequential):
    def forward(self, input):
        for module in self._modules.values():
            input = cp.checkpoint(module, input, use_reentrant=True)
        return input


class ResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = SublinearSequential(
            nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU()),
            BasicBlock(8, 8),
            BasicBlock(8, 16),
            BasicBlock(16, 16),
            BasicBlock(16, 32),
        )
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.linear = nn.Linear(32, num_classes)

    def forward(self, x):
        out = self.features(x)
        out = self.avgpool(out).flatten(1)
        return self.linear(out)


net = ResNet()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
for batch_idx in range(3):
    inputs = torch.randn(4, 3, 8, 8)
    targets = torch.randint(0, 10, (4,))
    optimizer.zero_grad()
    outputs = net(inputs)
    loss = criterion(outputs, targets)
    loss.backward()
    optimizer.step()
