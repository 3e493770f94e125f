import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


def MLP(dim, projection_size, hidden_size=32):
    return nn.Sequential(
        nn.Linear(dim, hidden_size),
        nn.BatchNorm1d(hidden_size),
        nn.ReLU(inplace=True),
        nn.Linear(hidden_size, projection_size)
    )


class EMA():
    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def update_average(self, old, new):
        if old is None:
            return new
        return old * self.beta + (1 - self.beta) * new


def update_moving_average(ema_updater, ma_model, current_model):
    for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):
        old_weight, up_weight = ma_params.data, current_params.data
        ma_params.data = ema_updater.update_average(old_weight, up_weight)


def set_requires_grad(model, val):
    for p in model.parameters():
        p.requires_grad = val


def loss_fn(x, y):
    x = F.normalize(x, dim=-1, p=2)
    y = F.normalize(y, dim=-1, p=2)
    return 2 - 2 * (x * y).sum(dim=-1)


class NetWrapper(nn.Module):
    def __init__(self, net, projection_size):
        super().__init__()
        self.net = net
        self.projector = MLP(16, projection_size)

    def forward(self, x):
        representation = self.net(x)
        projection = self.projector(representation)
        return projection, representation


class BYOL(nn.Module):
    def __init__(self, net, projection_size=8, moving_average_decay=0.99):
        super().__init__()
        self.online_encoder = NetWrapper(net, projection_size)
        self.target_encoder = None
        self.target_ema_updater = EMA(moving_average_decay)
        self.online_predictor = MLP(projection_size, projection_size)

    def _get_target_encoder(self):
        if self.target_encoder is None:
            target_encoder = copy.deepcopy(self.online_encoder)
            set_requires_grad(target_encoder, False)
            self.target_encoder = target_encoder
        return self.target_encoder

    def update_moving_average(self):
        assert self.target_encoder is not None, 'target encoder has not been created yet'
        update_moving_average(self.target_ema_updater, self.target_encoder, self.online_encoder)

    def augment(self, x):
        return x * (1 + 0.1 * torch.randn_like(x)) + 0.1 * torch.randn_like(x)

    def forward(self, x):
        image_one, image_two = self.augment(x), self.augment(x)

        online_proj_one, _ = self.online_encoder(image_one)
        online_proj_two, _ = self.online_encoder(image_two)

        online_pred_one = self.online_predictor(online_proj_one)
        online_pred_two = self.online_predictor(online_proj_two)

        with torch.no_grad():
            target_encoder = self._get_target_encoder()
            target_proj_one, _ = target_encoder(image_one)
            target_proj_two, _ = target_encoder(image_two)
            target_proj_one.detach_()
            target_proj_two.detach_()

        loss_one = loss_fn(online_pred_one, target_proj_two.detach())
        loss_two = loss_fn(online_pred_two, target_proj_one.detach())

        loss = loss_one + loss_two
        return loss.mean()


torch.manual_seed(0)
resnet = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 16))
learner = BYOL(resnet)
opt = torch.optim.Adam(learner.parameters(), lr=3e-4)

images = torch.randn(64, 12)
for step in range(6):
    batch = images[(step % 4) * 16:(step % 4 + 1) * 16]
    loss = learner(batch)
    opt.zero_grad()
    loss.backward()
    opt.step()
    learner.update_moving_average()
    print(step, loss.item())
