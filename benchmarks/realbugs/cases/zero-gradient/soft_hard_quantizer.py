import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Encoder(nn.Module):
    def __init__(self, in_dim=24, channel_bottleneck=4):
        super().__init__()
        self.fc = nn.Linear(in_dim, channel_bottleneck)

    def forward(self, x):
        return self.fc(x)


class Decoder(nn.Module):
    def __init__(self, channel_bottleneck=4, out_dim=24):
        super().__init__()
        self.fc = nn.Linear(channel_bottleneck, out_dim)

    def forward(self, w_bar):
        return self.fc(w_bar)


def quantizer(w, centers, temperature=1.0):
    w_stack = w.unsqueeze(-1)
    smx = F.softmax(-1.0 / temperature * (w_stack - centers) ** 2, dim=-1)
    w_soft = (smx * centers).sum(-1)
    w_hard = centers[smx.argmax(-1)]
    w_bar = torch.round((w_hard - w_soft).detach() + w_soft)
    return w_bar


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.decoder = Decoder()
        self.centers = torch.arange(-2, 3).float()

    def forward(self, x):
        w = self.encoder(x)
        w_bar = quantizer(w, self.centers)
        return self.decoder(w_bar)


model = Model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(16, 24)

for step in range(4):
    optimizer.zero_grad()
    reconstruction = model(x)
    distortion_penalty = F.mse_loss(reconstruction, x)
    distortion_penalty.backward()
    optimizer.step()
    print(step, distortion_penalty.item())
