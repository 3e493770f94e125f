import torch
import torch.nn as nn
import torch.nn.functional as F


class DwsConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.dw_conv = nn.Conv2d(in_channels, in_channels, 3, padding=1, groups=in_channels, bias=False)
        self.pw_conv = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x):
        x = self.dw_conv(x)
        x = self.pw_conv(x)
        return x


class DwsConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, activate):
        super().__init__()
        self.activate = activate
        if self.activate:
            self.activ = nn.ReLU(inplace=True)
        self.conv = DwsConv(in_channels, out_channels)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        if self.activate:
            x = self.activ(x)
        x = self.conv(x)
        x = self.bn(x)
        return x


class XceptionUnit(nn.Module):
    def __init__(self, in_channels, out_channels, strides, reps, start_with_relu=True):
        super().__init__()
        self.resize_identity = (in_channels != out_channels) or (strides != 1)
        if self.resize_identity:
            self.identity_conv = nn.Conv2d(in_channels, out_channels, 1, stride=strides, bias=False)
            self.identity_bn = nn.BatchNorm2d(out_channels)
        self.body = nn.Sequential()
        for i in range(reps):
            activate = start_with_relu if i == 0 else True
            self.body.add_module("block{}".format(i + 1), DwsConvBlock(
                in_channels if i == 0 else out_channels, out_channels, activate))
        if strides != 1:
            self.body.add_module("pool", nn.MaxPool2d(3, strides, 1))

    def forward(self, x):
        if self.resize_identity:
            identity = self.identity_conv(x)
            identity = self.identity_bn(identity)
        else:
            identity = x
        x = self.body(x)
        x = x + identity
        return x


class Xception(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.init_conv = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.init_bn = nn.BatchNorm2d(8)
        self.init_activ = nn.ReLU(inplace=True)
        self.unit1 = XceptionUnit(8, 16, strides=2, reps=2, start_with_relu=True)
        self.unit2 = XceptionUnit(16, 16, strides=1, reps=2)
        self.output = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.init_activ(self.init_bn(self.init_conv(x)))
        x = self.unit1(x)
        x = self.unit2(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.output(x)


def train(train_loader, model, criterion, optimizer, epoch):
    model.train()
    for i, (input, target) in enumerate(train_loader):
        output = model(input)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print("epoch {} iter {} loss {:.4f}".format(epoch, i, loss.item()))


torch.manual_seed(0)
model = Xception()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
train_loader = [(torch.randn(4, 3, 32, 32), torch.randint(0, 4, (4,))) for _ in range(2)]
for epoch in range(2):
    train(train_loader, model, criterion, optimizer, epoch)
