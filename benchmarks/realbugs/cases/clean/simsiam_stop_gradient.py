import math

import torch
import torch.nn as nn


class SimSiam(nn.Module):
    """Build a SimSiam model."""

    def __init__(self, base_encoder, dim=32, pred_dim=8):
        super(SimSiam, self).__init__()
        self.encoder = base_encoder(num_classes=dim, zero_init_residual=True)
        prev_dim = self.encoder.fc.weight.shape[1]
        self.encoder.fc = nn.Sequential(nn.Linear(prev_dim, prev_dim, bias=False),
                                        nn.BatchNorm1d(prev_dim),
                                        nn.ReLU(inplace=True),
                                        nn.Linear(prev_dim, prev_dim, bias=False),
                                        nn.BatchNorm1d(prev_dim),
                                        nn.ReLU(inplace=True),
                                        self.encoder.fc,
                                        nn.BatchNorm1d(dim, affine=False))
        self.encoder.fc[6].bias.requires_grad = False  # hack: not use bias as it is followed by BN

        self.predictor = nn.Sequential(nn.Linear(dim, pred_dim, bias=False),
                                       nn.BatchNorm1d(pred_dim),
                                       nn.ReLU(inplace=True),
                                       nn.Linear(pred_dim, dim))

    def forward(self, x1, x2):
        z1 = self.encoder(x1)
        z2 = self.encoder(x2)
        p1 = self.predictor(z1)
        p2 = self.predictor(z2)
        return p1, p2, z1.detach(), z2.detach()


class TinyResNet(nn.Module):
    def __init__(self, num_classes=1000, zero_init_residual=False):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        if zero_init_residual:
            nn.init.constant_(self.bn2.weight, 0)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.relu(x + self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def adjust_learning_rate(optimizer, init_lr, epoch, epochs):
    cur_lr = init_lr * 0.5 * (1. + math.cos(math.pi * epoch / epochs))
    for param_group in optimizer.param_groups:
        if 'fix_lr' in param_group and param_group['fix_lr']:
            param_group['lr'] = init_lr
        else:
            param_group['lr'] = cur_lr


torch.manual_seed(0)
model = SimSiam(TinyResNet, 32, 8)
init_lr = 0.05 * 16 / 256
criterion = nn.CosineSimilarity(dim=1)
optim_params = [{'params': model.encoder.parameters(), 'fix_lr': False},
                {'params': model.predictor.parameters(), 'fix_lr': True}]
optimizer = torch.optim.SGD(optim_params, init_lr, momentum=0.9, weight_decay=1e-4)
images = torch.rand(48, 3, 12, 12)
epochs = 2
for epoch in range(epochs):
    adjust_learning_rate(optimizer, init_lr, epoch, epochs)
    model.train()
    for i in range(3):
        batch = images[i * 16:(i + 1) * 16]
        x1 = batch + 0.1 * torch.randn_like(batch)
        x2 = torch.flip(batch, dims=[3])
        p1, p2, z1, z2 = model(x1=x1, x2=x2)
        loss = -(criterion(p1, z2).mean() + criterion(p2, z1).mean()) * 0.5
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
