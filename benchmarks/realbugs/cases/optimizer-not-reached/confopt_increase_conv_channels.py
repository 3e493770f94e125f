import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def increase_conv_channels(conv: nn.Conv2d, k: float) -> nn.Conv2d:
    if not isinstance(conv, nn.Conv2d):
        raise TypeError("expected nn.Conv2d")
    in_channels = int(conv.in_channels * k)
    out_channels = int(conv.out_channels * k)
    increased_conv = nn.Conv2d(
        in_channels,
        out_channels,
        kernel_size=conv.kernel_size,
        stride=conv.stride,
        padding=conv.padding,
        bias=conv.bias is not None,
    )
    return increased_conv


class PartialConnectionOp(nn.Module):
    def __init__(self, C, k):
        super().__init__()
        self.k = k
        self.op = nn.Conv2d(C // k, C // k, 3, padding=1, bias=False)

    def forward(self, x):
        dim_2 = x.shape[1]
        xtemp = x[:, : dim_2 // self.k]
        xtemp2 = x[:, dim_2 // self.k :]
        return torch.cat([F.relu(self.op(xtemp)), xtemp2], dim=1)

    def change_channel_size(self, k):
        self.op = increase_conv_channels(self.op, self.k / k)
        self.k = k


class SuperNet(nn.Module):
    def __init__(self, C=8, k=2):
        super().__init__()
        self.stem = nn.Conv2d(3, C, 3, padding=1)
        self.cell = PartialConnectionOp(C, k)
        self.classifier = nn.Linear(C, 10)

    def forward(self, x):
        return self.classifier(self.cell(self.stem(x)).mean((2, 3)))


model = SuperNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
for epoch in range(5):
    if epoch == 2:
        model.cell.change_channel_size(1)
    x = torch.randn(4, 3, 8, 8)
    y = torch.randint(0, 10, (4,))
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    print(epoch, loss.item())
