from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class YOLOLoss(nn.Module):
    def forward(self, predicts, targets):
        box_pred, cls_pred = predicts[..., :4], predicts[..., 4:]
        box_gt, cls_gt = targets[..., :4], targets[..., 4]
        loss_iou = F.l1_loss(box_pred, box_gt)
        loss_cls = F.cross_entropy(cls_pred.flatten(0, 1), cls_gt.long().flatten())
        loss_dict = {"BoxLoss": loss_iou, "ClsLoss": loss_cls}
        return loss_iou + loss_cls, loss_dict


class ModelTrainer:
    def __init__(self, model, device):
        self.model = model
        self.device = device
        self.optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
        self.loss_fn = YOLOLoss()

    def train_one_batch(self, images, targets):
        self.optimizer.zero_grad()
        predicts = self.model(images)
        loss, loss_each = self.loss_fn(predicts, targets)
        loss.backward()
        self.optimizer.step()
        return loss_each

    def train_one_epoch(self, dataloader):
        self.model.train()
        total_loss = defaultdict(lambda: torch.tensor(0.0, device=self.device))
        for images, targets in dataloader:
            loss_each = self.train_one_batch(images, targets)
            for loss_name, loss_val in loss_each.items():
                total_loss[loss_name] += loss_val * images.size(0)
        return total_loss


class TinyDetector(nn.Module):
    def __init__(self, num_anchors=6, num_classes=3):
        super().__init__()
        self.num_anchors = num_anchors
        self.head = nn.Linear(10, num_anchors * (4 + num_classes))

    def forward(self, x):
        return self.head(x).view(x.size(0), self.num_anchors, -1)


device = torch.device("cpu")
model = TinyDetector().to(device)
trainer = ModelTrainer(model, device)
dataloader = []
for _ in range(5):
    images = torch.randn(4, 10)
    targets = torch.cat([torch.rand(4, 6, 4), torch.randint(0, 3, (4, 6, 1)).float()], dim=-1)
    dataloader.append((images, targets))
for epoch in range(2):
    total_loss = trainer.train_one_epoch(dataloader)
    print({name: round(value.item() / 20, 4) for name, value in total_loss.items()})
