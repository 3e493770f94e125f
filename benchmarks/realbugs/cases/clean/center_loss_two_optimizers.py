import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class CenterLoss(nn.Module):
    """Center loss (Wen et al., ECCV 2016): a learnable center per class."""

    def __init__(self, num_classes=10, feat_dim=2, use_gpu=False):
        super(CenterLoss, self).__init__()
        self.num_classes = num_classes
        self.feat_dim = feat_dim
        self.centers = nn.Parameter(torch.randn(self.num_classes, self.feat_dim))

    def forward(self, x, labels):
        batch_size = x.size(0)
        distmat = torch.pow(x, 2).sum(dim=1, keepdim=True).expand(batch_size, self.num_classes) + \
                  torch.pow(self.centers, 2).sum(dim=1, keepdim=True).expand(self.num_classes, batch_size).t()
        distmat.addmm_(x, self.centers.t(), beta=1, alpha=-2)

        classes = torch.arange(self.num_classes).long()
        labels = labels.unsqueeze(1).expand(batch_size, self.num_classes)
        mask = labels.eq(classes.expand(batch_size, self.num_classes))

        dist = distmat * mask.float()
        loss = dist.clamp(min=1e-12, max=1e+12).sum() / batch_size
        return loss


class ConvNet(nn.Module):
    def __init__(self, num_classes):
        super(ConvNet, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.prelu1 = nn.PReLU()
        self.fc1 = nn.Linear(8 * 7 * 7, 2)
        self.prelu_fc1 = nn.PReLU()
        self.fc2 = nn.Linear(2, num_classes)

    def forward(self, x):
        x = F.max_pool2d(self.prelu1(self.conv1(x)), 4)
        x = x.view(-1, 8 * 7 * 7)
        x = self.prelu_fc1(self.fc1(x))
        y = self.fc2(x)
        return x, y


torch.manual_seed(1)
num_classes = 10
weight_cent = 0.01
trainloader = DataLoader(TensorDataset(torch.randn(64, 1, 28, 28), torch.randint(0, num_classes, (64,))),
                         batch_size=16, shuffle=True)
model = ConvNet(num_classes=num_classes)
criterion_xent = nn.CrossEntropyLoss()
criterion_cent = CenterLoss(num_classes=num_classes, feat_dim=2, use_gpu=False)
optimizer_model = torch.optim.SGD(model.parameters(), lr=0.001, weight_decay=5e-04, momentum=0.9)
optimizer_centloss = torch.optim.SGD(criterion_cent.parameters(), lr=0.5)

for epoch in range(2):
    model.train()
    for batch_idx, (data, labels) in enumerate(trainloader):
        features, outputs = model(data)
        loss_xent = criterion_xent(outputs, labels)
        loss_cent = criterion_cent(features, labels)
        loss_cent *= weight_cent
        loss = loss_xent + loss_cent
        optimizer_model.zero_grad()
        optimizer_centloss.zero_grad()
        loss.backward()
        optimizer_model.step()
        # by doing so, weight_cent would not impact on the learning of centers
        for param in criterion_cent.parameters():
            param.grad.data *= (1. / weight_cent)
        optimizer_centloss.step()
    print(epoch, loss.item())
