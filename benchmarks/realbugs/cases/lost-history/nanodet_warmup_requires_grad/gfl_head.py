import torch
import torch.nn as nn
import torch.nn.functional as F


def multi_apply(func, *args):
    results = map(func, *args)
    return tuple(map(list, zip(*results)))


class GFLHead(nn.Module):
    def __init__(self, num_classes=3, in_channels=8, reg_max=7):
        super().__init__()
        self.num_classes = num_classes
        self.reg_max = reg_max
        self.gfl_cls = nn.Conv2d(in_channels, num_classes, 1)
        self.gfl_reg = nn.Conv2d(in_channels, 4 * (reg_max + 1), 1)

    def forward(self, feats):
        return [self.gfl_cls(f) for f in feats], [self.gfl_reg(f) for f in feats]

    def loss_single(self, cls_score, bbox_pred, labels, bbox_targets):
        cls_score = cls_score.permute(0, 2, 3, 1).reshape(-1, self.num_classes)
        bbox_pred = bbox_pred.permute(0, 2, 3, 1).reshape(-1, 4 * (self.reg_max + 1))
        labels = labels.reshape(-1)
        bbox_targets = bbox_targets.reshape(-1, 4)
        pos_inds = torch.nonzero(labels >= 0).squeeze(1)
        score = torch.zeros_like(cls_score)
        score[pos_inds, labels[pos_inds]] = 1.0
        loss_qfl = F.binary_cross_entropy_with_logits(cls_score, score, reduction='sum')
        if len(pos_inds) > 0:
            pos_pred = bbox_pred[pos_inds].reshape(-1, 4, self.reg_max + 1)
            pos_dist = (pos_pred.softmax(-1) * torch.arange(self.reg_max + 1.0)).sum(-1)
            loss_bbox = F.l1_loss(pos_dist, bbox_targets[pos_inds], reduction='sum')
            target_bins = bbox_targets[pos_inds].clamp(0, self.reg_max - 0.01).long()
            loss_dfl = F.cross_entropy(pos_pred.reshape(-1, self.reg_max + 1), target_bins.reshape(-1), reduction='sum')
        else:
            loss_bbox = bbox_pred.sum() * 0
            loss_dfl = bbox_pred.sum() * 0
        return loss_qfl, loss_bbox, loss_dfl, float(len(pos_inds))

    def loss(self, preds, gt_meta):
        cls_scores, bbox_preds = preds
        device = cls_scores[0].device
        labels_list, bbox_targets_list = gt_meta['labels'], gt_meta['bbox_targets']
        losses_qfl, losses_bbox, losses_dfl, avg_factor = multi_apply(
            self.loss_single, cls_scores, bbox_preds, labels_list, bbox_targets_list)
        avg_factor = sum(avg_factor)
        if avg_factor <= 0:
            loss_qfl = torch.tensor(0, dtype=torch.float32, requires_grad=True).to(device)
            loss_bbox = torch.tensor(0, dtype=torch.float32, requires_grad=True).to(device)
            loss_dfl = torch.tensor(0, dtype=torch.float32, requires_grad=True).to(device)
        else:
            loss_qfl = sum(losses_qfl) / avg_factor
            loss_bbox = sum(losses_bbox) / avg_factor
            loss_dfl = sum(losses_dfl) / avg_factor
        loss = loss_qfl + loss_bbox + loss_dfl
        loss_states = dict(loss_qfl=loss_qfl, loss_bbox=loss_bbox, loss_dfl=loss_dfl)
        return loss, loss_states
