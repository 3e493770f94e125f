import torch
import torch.nn as nn


class SelfSupModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.depth_net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))

    def training_step(self, batch, *args):
        depth = torch.sigmoid(self.depth_net(batch["rgb"]))
        loss = (depth - batch["depth"]).abs().mean()
        return {"loss": loss, "metrics": {"depth_mean": depth.mean().item()}}

    def training_epoch_end(self, output_batch):
        avg_train_loss = torch.stack([x["loss"] for x in output_batch]).mean()
        return {"avg_train-loss": avg_train_loss}
