import torch
import torch.nn as nn
import torch.nn.functional as F


class RankLoss(nn.Module):
    def __init__(self, margin=0.05):
        super().__init__()
        self.margin = margin

    def forward(self, scores1, scores2, target):
        ps1 = F.softmax(scores1, dim=1).gather(1, target.long().view(-1, 1))
        ps2 = F.softmax(scores2, dim=1).gather(1, target.long().view(-1, 1))
        return torch.clamp(ps1 - ps2 + self.margin, min=0)


class RACNN(nn.Module):
    def __init__(self, num_classes=4, scales=3):
        super().__init__()
        self.cnns = nn.ModuleList([
            nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, num_classes)) for _ in range(scales)])

    def forward(self, x):
        scores = []
        for i, cnn in enumerate(self.cnns):
            scores.append(cnn(x))
            x = F.interpolate(x[:, :, 2:-2, 2:-2], size=x.shape[2:], mode='bilinear', align_corners=False)
        return scores


class Manager:
    def __init__(self, model):
        self.model = model
        self.criterion_class = nn.CrossEntropyLoss()
        self.criterion_rank = RankLoss()

    def do_batch(self, optimizer, batch, label, optimize_class=True):
        self.model.zero_grad()
        scores = self.model(batch)
        if optimize_class:
            for score in scores:
                self.criterion_class(score, label).backward(retain_graph=True)
        else:
            for i in range(1, len(scores)):
                retain_graph = i < len(scores) - 1
                self.criterion_rank(scores[i - 1], scores[i], label).backward(retain_graph=retain_graph)
        optimizer.step()

    def do_epoch(self, epoch_idx, optimizer, loader, optimize_class=True):
        for batch, label in loader:
            self.do_batch(optimizer, batch, label, optimize_class=optimize_class)

    def train(self, loader, epochs=2):
        optimizer = torch.optim.SGD(self.model.parameters(), lr=0.001, momentum=0.9)
        for epoch_idx in range(epochs):
            optimize_class = epoch_idx % 2 == 0
            self.do_epoch(epoch_idx, optimizer, loader, optimize_class=optimize_class)


torch.manual_seed(0)
batch_size = 32
loader = [(torch.randn(batch_size, 3, 16, 16), torch.randint(0, 4, (batch_size,))) for _ in range(2)]
manager = Manager(RACNN())
manager.train(loader)
