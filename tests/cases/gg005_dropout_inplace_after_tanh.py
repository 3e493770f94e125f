# plain-torch: raises "modified by an inplace operation"
"""GG005: nn.Dropout(inplace=True) right after tanh, whose backward needs its own output."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, inplace_dropout):
        super().__init__()
        self.fc1 = nn.Linear(12, 32)
        self.drop = nn.Dropout(0.25, inplace=inplace_dropout)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        h = torch.tanh(self.fc1(x))
        h = self.drop(h)  # expect: GG005 self.drop
        return self.fc2(h)


class ConvNet(nn.Module):
    """Legitimate in-place activations: their inputs are not saved by the op before them."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                                  nn.Conv2d(4, 4, 3), nn.ReLU(inplace=True))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 4 * 4, 16), nn.Dropout(0.2, inplace=True),
                                  nn.ReLU(inplace=True), nn.Linear(16, 3))

    def forward(self, x):
        return self.head(self.body(x))


def buggy():
    torch.manual_seed(0)
    model = MLP(inplace_dropout=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        x, y = torch.randn(16, 12), torch.randint(0, 3, (16,))
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


def clean():
    torch.manual_seed(0)
    for model, shape in ((MLP(inplace_dropout=False), (16, 12)), (ConvNet(), (16, 1, 8, 8))):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            x, y = torch.randn(*shape), torch.randint(0, 3, (16,))
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            model(torch.randn(*shape))
