import torch
import torch.nn as nn
import torch.optim as optim


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1):
        super(BasicBlock, self).__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or inplanes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return self.relu(out)


class ResNet18Like(nn.Module):
    def __init__(self, num_classes=1000):
        super(ResNet18Like, self).__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = BasicBlock(8, 8)
        self.layer2 = BasicBlock(8, 16, 2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


torch.manual_seed(0)
model = ResNet18Like()
for param in model.parameters():
    param.requires_grad = False
model.fc = nn.Linear(16, 5)

optimizer = optim.SGD(model.fc.parameters(), lr=1e-2, momentum=0.9)
criterion = nn.CrossEntropyLoss()

inputs = torch.randn(32, 3, 8, 8)
labels = torch.randint(0, 5, (32,))
model.train()
for epoch in range(3):
    for i in range(0, 32, 8):
        optimizer.zero_grad()
        outputs = model(inputs[i:i + 8])
        loss = criterion(outputs, labels[i:i + 8])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
