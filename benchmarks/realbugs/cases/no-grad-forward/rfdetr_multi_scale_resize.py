import random

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class NestedTensor(object):
    def __init__(self, tensors, mask):
        self.tensors = tensors
        self.mask = mask

    def to(self, device):
        return NestedTensor(self.tensors.to(device), self.mask.to(device))


class LWDETR(nn.Module):
    def __init__(self, num_classes=3, num_queries=4, hidden_dim=16):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, hidden_dim, 4, stride=4), nn.GELU(),
                                      nn.Conv2d(hidden_dim, hidden_dim, 3, padding=1))
        self.query_embed = nn.Embedding(num_queries, hidden_dim)
        self.class_embed = nn.Linear(hidden_dim, num_classes + 1)
        self.bbox_embed = nn.Linear(hidden_dim, 4)

    def forward(self, samples, targets=None):
        features = self.backbone(samples.tensors).flatten(2).transpose(1, 2)
        attn = torch.softmax(self.query_embed.weight @ features.transpose(1, 2), dim=-1)
        hs = attn @ features
        return {"pred_logits": self.class_embed(hs), "pred_boxes": self.bbox_embed(hs).sigmoid()}


class SetCriterion(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight_dict = {"loss_ce": 1.0, "loss_bbox": 5.0}

    def forward(self, outputs, targets):
        labels = torch.stack([t["labels"] for t in targets])
        boxes = torch.stack([t["boxes"] for t in targets])
        loss_ce = F.cross_entropy(outputs["pred_logits"].flatten(0, 1), labels.flatten())
        loss_bbox = F.l1_loss(outputs["pred_boxes"], boxes)
        return {"loss_ce": loss_ce, "loss_bbox": loss_bbox}


def train_one_epoch(model, criterion, data_loader, optimizer, device, epoch, batch_size, args):
    model.train()
    criterion.train()
    optimizer.zero_grad()
    sub_batch_size = batch_size // args["grad_accum_steps"]
    for data_iter_step, (samples, targets) in enumerate(data_loader):
        if args["multi_scale"]:
            scales = [32, 40, 48]
            random.seed(data_iter_step)
            scale = random.choice(scales)
            with torch.inference_mode():
                samples.tensors = F.interpolate(samples.tensors, size=scale, mode='bilinear', align_corners=False)
                samples.mask = F.interpolate(samples.mask.unsqueeze(1).float(), size=scale, mode='nearest').squeeze(1).bool()

        for i in range(args["grad_accum_steps"]):
            start_idx = i * sub_batch_size
            final_idx = start_idx + sub_batch_size
            new_samples_tensors = samples.tensors[start_idx:final_idx]
            new_samples = NestedTensor(new_samples_tensors, samples.mask[start_idx:final_idx])
            new_samples = new_samples.to(device)
            new_targets = [{k: v.to(device) for k, v in t.items()} for t in targets[start_idx:final_idx]]
            outputs = model(new_samples, new_targets)
            loss_dict = criterion(outputs, new_targets)
            weight_dict = criterion.weight_dict
            losses = sum((1 / args["grad_accum_steps"]) * loss_dict[k] * weight_dict[k]
                         for k in loss_dict.keys() if k in weight_dict)
            losses.backward()

        optimizer.step()
        optimizer.zero_grad()


def make_batch(batch_size=4):
    samples = NestedTensor(torch.randn(batch_size, 3, 32, 32), torch.zeros(batch_size, 32, 32, dtype=torch.bool))
    targets = [{"labels": torch.randint(0, 4, (4,)), "boxes": torch.rand(4, 4)} for _ in range(batch_size)]
    return samples, targets


model = LWDETR()
criterion = SetCriterion()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-4)
data_loader = [make_batch() for _ in range(2)]
args = {"multi_scale": True, "grad_accum_steps": 2}
for epoch in range(1):
    train_one_epoch(model, criterion, data_loader, optimizer, torch.device("cpu"), epoch, 4, args)
