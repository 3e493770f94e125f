import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def one_hot_embedding(labels, num_classes):
    y = torch.eye(num_classes)
    return y[labels]


class FocalLoss(nn.Module):
    def __init__(self, num_classes=20):
        super(FocalLoss, self).__init__()
        self.num_classes = num_classes

    def focal_loss(self, x, y):
        alpha = 0.25
        gamma = 2

        t = one_hot_embedding(y, 1 + self.num_classes)
        t = t[:, 1:]

        p = x.sigmoid()
        pt = p * t + (1 - p) * (1 - t)
        w = alpha * t + (1 - alpha) * (1 - t)
        w = w * (1 - pt).pow(gamma)
        return F.binary_cross_entropy_with_logits(x, t, w, reduction="sum")

    def forward(self, cls_preds, cls_targets):
        pos = cls_targets > 0
        num_pos = pos.sum().clamp(min=1).float()
        cls_loss = self.focal_loss(cls_preds, cls_targets)
        return cls_loss / num_pos


class RetinaHead(nn.Module):
    def __init__(self, num_classes=20):
        super().__init__()
        self.cls_head = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, num_classes))

    def forward(self, x):
        return self.cls_head(x)


net = RetinaHead()
criterion = FocalLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9)
for _ in range(5):
    inputs = torch.randn(12, 16)
    cls_targets = torch.randint(0, 21, (12,))
    optimizer.zero_grad()
    cls_preds = net(inputs)
    loss = criterion(cls_preds, cls_targets)
    loss.backward()
    optimizer.step()
