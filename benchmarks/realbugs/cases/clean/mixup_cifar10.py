import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.autograd import Variable
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
np.random.seed(0)
use_cuda = False


class PreActBlock(nn.Module):
    def __init__(self, planes):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv1 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)

    def forward(self, x):
        out = torch.relu(self.bn1(x))
        out = self.conv1(out)
        out = self.conv2(torch.relu(self.bn2(out)))
        return out + x


class PreActResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.layer1 = PreActBlock(8)
        self.bn = nn.BatchNorm2d(8)
        self.linear = nn.Linear(8, num_classes)

    def forward(self, x):
        out = self.layer1(self.conv1(x))
        out = torch.relu(self.bn(out))
        out = nn.functional.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(out)


def mixup_data(x, y, alpha=1.0, use_cuda=True):
    '''Returns mixed inputs, pairs of targets, and lambda'''
    if alpha > 0:
        lam = np.random.beta(alpha, alpha)
    else:
        lam = 1
    batch_size = x.size()[0]
    if use_cuda:
        index = torch.randperm(batch_size).cuda()
    else:
        index = torch.randperm(batch_size)
    mixed_x = lam * x + (1 - lam) * x[index, :]
    y_a, y_b = y, y[index]
    return mixed_x, y_a, y_b, lam


def mixup_criterion(criterion, pred, y_a, y_b, lam):
    return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)


trainloader = DataLoader(TensorDataset(torch.randn(64, 3, 8, 8), torch.randint(0, 10, (64,))),
                         batch_size=16, shuffle=True)
net = PreActResNet()
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)


def train(epoch):
    net.train()
    train_loss = 0
    reg_loss = 0
    correct = 0
    total = 0
    for batch_idx, (inputs, targets) in enumerate(trainloader):
        inputs, targets_a, targets_b, lam = mixup_data(inputs, targets, 1.0, use_cuda)
        inputs, targets_a, targets_b = map(Variable, (inputs, targets_a, targets_b))
        outputs = net(inputs)
        loss = mixup_criterion(criterion, outputs, targets_a, targets_b, lam)
        train_loss += loss.data.item()
        _, predicted = torch.max(outputs.data, 1)
        total += targets.size(0)
        correct += (lam * predicted.eq(targets_a.data).cpu().sum().float()
                    + (1 - lam) * predicted.eq(targets_b.data).cpu().sum().float())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return train_loss / (batch_idx + 1), reg_loss / (batch_idx + 1), 100. * correct / total


for epoch in range(2):
    print(train(epoch))
