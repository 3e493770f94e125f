import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class LossesTrackEpoch:
    def __init__(self, num_iterations):
        self.num_iterations = num_iterations
        self.validation_losses = {}
        self.train_losses = {}
        self.train_iteration_counts = 0
        self.validation_iteration_counts = 0

    def set_train_losses(self, keys):
        for key in keys:
            self.train_losses[key] = 0

    def update_train_losses(self, loss):
        for key in loss:
            self.train_losses[key] += loss[key]
        self.train_iteration_counts += 1

    def restart_train_losses(self):
        for key in self.train_losses.keys():
            self.train_losses[key] = 0
        self.train_iteration_counts = 0


class Metrics:
    def __init__(self, num_iterations):
        self.losses_track = LossesTrackEpoch(num_iterations)


class SSC(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 1))

    def forward(self, data):
        return {"pred_semantic_1_1": self.net(data["3D_OCCUPANCY"])}

    def compute_loss(self, scores, data):
        target = data["3D_LABEL"]
        loss_1_1 = F.cross_entropy(scores["pred_semantic_1_1"], target)
        loss_aux = scores["pred_semantic_1_1"].pow(2).mean() * 1e-3
        return {"total": loss_1_1 + loss_aux, "semantic_1_1": loss_1_1, "aux": loss_aux}

    def get_train_loss_keys(self):
        return ["total", "semantic_1_1", "aux"]


model = SSC()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
dset_loader = [
    {"3D_OCCUPANCY": torch.randn(2, 4, 8, 8), "3D_LABEL": torch.randint(0, 3, (2, 8, 8))}
    for _ in range(6)
]
metrics = Metrics(len(dset_loader))
metrics.losses_track.set_train_losses(model.get_train_loss_keys())

for epoch in range(2):
    model.train()
    for t, data in enumerate(dset_loader):
        scores = model(data)
        loss = model.compute_loss(scores, data)
        optimizer.zero_grad()
        loss["total"].backward()
        optimizer.step()
        metrics.losses_track.update_train_losses(loss)
    epoch_loss = metrics.losses_track.train_losses["total"] / metrics.losses_track.train_iteration_counts
    print(epoch, float(epoch_loss))
    if epoch < 1:
        metrics.losses_track.restart_train_losses()
