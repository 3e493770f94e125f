import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyDLA(nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.base = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.hm = nn.Conv2d(8, heads["hm"], 1)
        self.id = nn.Conv2d(8, heads["id"], 1)

    def forward(self, x):
        z = self.base(x)
        return [{"hm": self.hm(z), "id": self.id(z)}]


class MotLoss(torch.nn.Module):
    def __init__(self, opt):
        super(MotLoss, self).__init__()
        self.crit = torch.nn.MSELoss()
        self.IDLoss = nn.CrossEntropyLoss(ignore_index=-1)
        self.emb_dim = opt.reid_dim
        self.nID = opt.nID
        self.classifier = nn.Linear(self.emb_dim, self.nID)
        self.emb_scale = math.sqrt(2) * math.log(self.nID - 1)

    def forward(self, outputs, batch):
        output = outputs[0]
        hm_loss = self.crit(output["hm"].sigmoid(), batch["hm"])
        id_head = output["id"].mean(dim=(2, 3))
        id_head = self.emb_scale * F.normalize(id_head)
        id_output = self.classifier(id_head).contiguous()
        id_loss = self.IDLoss(id_output, batch["ids"])
        loss = hm_loss + 0.1 * id_loss
        return loss, {"loss": loss, "hm_loss": hm_loss, "id_loss": id_loss}


class ModleWithLoss(torch.nn.Module):
    def __init__(self, model, loss):
        super(ModleWithLoss, self).__init__()
        self.model = model
        self.loss = loss

    def forward(self, batch):
        outputs = self.model(batch["input"])
        loss, loss_stats = self.loss(outputs, batch)
        return outputs[-1], loss, loss_stats


class MotTrainer(object):
    def __init__(self, opt, model, optimizer=None):
        self.opt = opt
        self.optimizer = optimizer
        self.loss_stats, self.loss = self._get_losses(opt)
        self.model_with_loss = ModleWithLoss(model, self.loss)

    def _get_losses(self, opt):
        loss_states = ["loss", "hm_loss", "id_loss"]
        loss = MotLoss(opt)
        return loss_states, loss

    def run_epoch(self, data_loader):
        self.model_with_loss.train()
        for batch in data_loader:
            output, loss, loss_stats = self.model_with_loss(batch)
            loss = loss.mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
