import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=True),
            nn.ReLU(),
            nn.BatchNorm2d(out_channels)
        )

    def forward(self, x):
        return self.block(x)


class BallTrackerNet(nn.Module):
    def __init__(self, input_channels=3, out_channels=15):
        super().__init__()
        self.conv1 = ConvBlock(in_channels=input_channels, out_channels=8)
        self.pool1 = nn.MaxPool2d(kernel_size=2, stride=2)
        self.conv2 = ConvBlock(in_channels=8, out_channels=16)
        self.ups1 = nn.Upsample(scale_factor=2)
        self.conv3 = ConvBlock(in_channels=16, out_channels=8)
        self.conv4 = nn.Conv2d(8, out_channels, kernel_size=1)

    def forward(self, x):
        x = self.conv1(x)
        x = self.pool1(x)
        x = self.conv2(x)
        x = self.ups1(x)
        x = self.conv3(x)
        return self.conv4(x)


def train(model, train_loader, optimizer, criterion, device, epoch, max_iters=1000):
    model.train()
    losses = []
    max_iters = min(max_iters, len(train_loader))

    for iter_id, batch in enumerate(train_loader):
        out = model(batch[0].float().to(device))
        gt_hm_hp = batch[1].float().to(device)
        loss = criterion(F.sigmoid(out), gt_hm_hp)

        loss.backward()
        optimizer.step()
        print('train, epoch = {}, iter_id = {}/{}, loss = {}'.format(epoch, iter_id, max_iters, loss.item()))
        losses.append(loss.item())
        if iter_id > max_iters:
            break

    return np.mean(losses)


device = 'cpu'
model = BallTrackerNet(out_channels=15)
model = model.to(device)
train_loader = [(torch.rand(2, 3, 16, 16), torch.rand(2, 15, 16, 16)) for _ in range(4)]
criterion = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-5, betas=(0.9, 0.999), weight_decay=0)

for epoch in range(2):
    train_loss = train(model, train_loader, optimizer, criterion, device, epoch, max_iters=1000)
    print('train_loss = {}'.format(train_loss))
