import torch
from torch import nn

torch.manual_seed(0)


def _threshold(x, threshold=None):
    if threshold is not None:
        return (x > threshold).type(x.dtype)
    else:
        return x


def _take_channels(*xs, ignore_channels=None):
    if ignore_channels is None:
        return xs
    channels = [channel for channel in range(xs[0].shape[1]) if channel not in ignore_channels]
    return [torch.index_select(x, dim=1, index=torch.tensor(channels)) for x in xs]


def f_score(pr, gt, beta=1, eps=1e-7, threshold=None, ignore_channels=None):
    pr = _threshold(pr, threshold=threshold)
    pr, gt = _take_channels(pr, gt, ignore_channels=ignore_channels)
    tp = torch.sum(gt * pr)
    fp = torch.sum(pr) - tp
    fn = torch.sum(gt) - tp
    score = ((1 + beta ** 2) * tp + eps) / ((1 + beta ** 2) * tp + beta ** 2 * fn + fp + eps)
    return score


class DiceLoss(nn.Module):
    def __init__(self, eps=1.0, beta=1.0, activation=None, threshold=None, ignore_channels=None):
        super().__init__()
        self.eps = eps
        self.beta = beta
        self.activation = nn.Sigmoid() if activation == "sigmoid" else nn.Identity()
        self.threshold = threshold
        self.ignore_channels = ignore_channels

    def forward(self, y_pr, y_gt):
        y_pr = self.activation(y_pr)
        return 1 - f_score(y_pr, y_gt, beta=self.beta, eps=self.eps, threshold=self.threshold,
                           ignore_channels=self.ignore_channels)


class TrainEpoch:
    def __init__(self, model, loss, optimizer):
        self.model = model
        self.loss = loss
        self.optimizer = optimizer

    def batch_update(self, x, y):
        self.optimizer.zero_grad()
        prediction = self.model.forward(x)
        loss = self.loss(prediction, y)
        loss.backward()
        self.optimizer.step()
        return loss, prediction

    def run(self, dataloader):
        for x, y in dataloader:
            self.batch_update(x, y)


model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 1))
loss = DiceLoss(activation="sigmoid", threshold=0.5)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
train_loader = [(torch.randn(2, 3, 16, 16), (torch.rand(2, 2, 16, 16) > 0.5).float()) for _ in range(3)]

train_epoch = TrainEpoch(model, loss=loss, optimizer=optimizer)
for i in range(2):
    train_epoch.run(train_loader)
