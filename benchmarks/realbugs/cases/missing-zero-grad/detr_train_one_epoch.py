import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TinyDETR(nn.Module):
    def __init__(self, num_queries=4, num_classes=3):
        super().__init__()
        self.backbone = nn.Linear(12, 16)
        self.query_embed = nn.Embedding(num_queries, 16)
        self.class_embed = nn.Linear(16, num_classes + 1)
        self.bbox_embed = nn.Linear(16, 4)

    def forward(self, samples):
        memory = F.relu(self.backbone(samples)).unsqueeze(1)
        hs = memory + self.query_embed.weight.unsqueeze(0)
        return {"pred_logits": self.class_embed(hs), "pred_boxes": self.bbox_embed(hs).sigmoid()}


class SetCriterion(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight_dict = {"loss_ce": 1.0, "loss_bbox": 5.0}

    def forward(self, outputs, targets):
        loss_ce = F.cross_entropy(outputs["pred_logits"].flatten(0, 1), targets["labels"].flatten())
        loss_bbox = F.l1_loss(outputs["pred_boxes"], targets["boxes"])
        return {"loss_ce": loss_ce, "loss_bbox": loss_bbox}


def train_one_epoch(model, criterion, data_loader, optimizer, device, epoch, max_norm=0):
    model.train()
    criterion.train()
    for samples, targets in data_loader:
        samples = samples.to(device)
        outputs = model(samples)
        loss_dict = criterion(outputs, targets)
        weight_dict = criterion.weight_dict
        losses = sum(loss_dict[k] * weight_dict[k] for k in loss_dict.keys() if k in weight_dict)
        loss_value = losses.item()
        if not math.isfinite(loss_value):
            raise SystemExit(1)
        losses.backward()
        if max_norm > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()


model = TinyDETR()
criterion = SetCriterion()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-4)
samples = torch.randn(6, 12)
targets = {"labels": torch.randint(0, 4, (6, 4)), "boxes": torch.rand(6, 4, 4)}
data_loader = [(samples, targets)] * 5
for epoch in range(2):
    train_one_epoch(model, criterion, data_loader, optimizer, torch.device("cpu"), epoch, max_norm=0)
