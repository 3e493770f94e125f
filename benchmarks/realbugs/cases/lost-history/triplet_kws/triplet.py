import torch

from modules import TrainableNM


class OnlineTripletLoss(TrainableNM):
    def __init__(self, margin=0.5):
        super().__init__()
        self.margin = margin

    def forward(self, embeds, labels):
        dist = torch.cdist(embeds, embeds)
        same = labels[:, None] == labels[None, :]
        hardest_pos = (dist * same).max(1)[0]
        hardest_neg = (dist + 10.0 * same).min(1)[0]
        losses = torch.relu(hardest_pos - hardest_neg + self.margin)
        mean_losses = losses.mean()
        mean_losses.requires_grad = True
        return mean_losses
