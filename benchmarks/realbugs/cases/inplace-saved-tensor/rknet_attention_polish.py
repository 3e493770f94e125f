import torch
import torch.nn as nn
import torch.nn.functional as F


class USAM(nn.Module):
    def __init__(self, in_channels, polish=True):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 1, 3, padding=1)
        self.bn = nn.BatchNorm2d(1)
        self.relu = nn.ReLU()
        self.polish = polish

    def forward(self, x):
        att = self.relu(self.bn(self.conv(x)))
        if self.polish:
            att[:, :, :, 0] = 0
            att[:, :, :, -1] = 0
            att[:, :, 0, :] = 0
            att[:, :, -1, :] = 0
        return x * att + x


class Net(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.usam = USAM(8)
        self.classifier = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = self.usam(x)
        return self.classifier(F.adaptive_avg_pool2d(x, 1).flatten(1))


torch.manual_seed(0)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
criterion = nn.CrossEntropyLoss()
inputs = torch.randn(8, 3, 12, 12)
labels = torch.randint(0, 5, (8,))

for epoch in range(2):
    optimizer.zero_grad()
    outputs = model(inputs)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
