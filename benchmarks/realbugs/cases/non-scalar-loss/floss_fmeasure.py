import torch
from torch import nn

torch.manual_seed(0)


class FLoss(nn.Module):
    def __init__(self, beta=0.3, log_like=False):
        super(FLoss, self).__init__()
        self.beta = beta
        self.log_like = log_like

    def forward(self, prediction, target):
        EPS = 1e-10
        N = prediction.size(0)
        TP = (prediction * target).view(N, -1).sum(dim=1)
        H = self.beta * target.view(N, -1).sum(dim=1) + prediction.view(N, -1).sum(dim=1)
        fmeasure = (1 + self.beta) * TP / (H + EPS)
        if self.log_like:
            floss = -torch.log(fmeasure)
        else:
            floss = (1 - fmeasure)
        return floss


class SaliencyNet(nn.Module):
    def __init__(self):
        super(SaliencyNet, self).__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(8, 1, 3, padding=1))

    def forward(self, x):
        return torch.sigmoid(self.features(x))


model = SaliencyNet()
fl = FLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for it in range(3):
    data = torch.rand(4, 3, 16, 16)
    target = (torch.rand(4, 1, 16, 16) >= 0.5).float()
    output = model(data)
    loss = fl(output, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(it, loss.mean().item())
