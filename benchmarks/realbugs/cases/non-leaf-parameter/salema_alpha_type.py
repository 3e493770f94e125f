import torch
import torch.nn as nn

dtype = torch.DoubleTensor


class SalGAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.ema_conv = nn.Conv2d(8, 8, 3, padding=1)
        self.decoder = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(8, 1, 1), nn.Sigmoid())


class SalEMA(nn.Module):
    def __init__(self, alpha=0.25, residual=False, dropout=True):
        super().__init__()
        self.salgan = SalGAN()
        self.residual = residual
        self.dropout = nn.Dropout2d(0.5) if dropout else nn.Identity()
        self.alpha = torch.tensor([alpha], requires_grad=True).type(dtype)
        print("Initial alpha set to: {}".format(self.alpha))

    def forward(self, input_, prev_state=None):
        x = self.salgan.encoder(input_)
        current_state = self.salgan.ema_conv(self.dropout(x))
        if prev_state is None:
            prev_state = current_state
        state = torch.sigmoid(self.alpha) * current_state + (1 - torch.sigmoid(self.alpha)) * prev_state
        return state, self.salgan.decoder(state)


def main(args):
    torch.manual_seed(0)
    model = SalEMA(alpha=args["alpha"]).type(dtype)
    print("Initialized SalEMA with residual set to False and dropout set to True")
    weight_decay = 1e-4
    optimizer = torch.optim.Adam([{'params': model.salgan.parameters(), 'lr': args["lr"], 'weight_decay': weight_decay},
                                  {'params': model.alpha, 'lr': 0.1}])
    criterion = nn.BCELoss()
    clip = torch.rand(4, 2, 3, 16, 16).type(dtype)
    gt = torch.rand(4, 2, 1, 16, 16).type(dtype)
    for epoch in range(args["epochs"]):
        state = None
        loss = 0
        for j in range(clip.size(0)):
            state, saliency_map = model(clip[j], state)
            loss = loss + criterion(saliency_map, gt[j])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(epoch, loss.item(), model.alpha)


main({"alpha": 0.25, "lr": 1e-4, "epochs": 2})
