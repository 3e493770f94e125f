import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

E4M3_MAX_POS = 448.0


def amax_to_scale(amax):
    return E4M3_MAX_POS / torch.clamp(amax, min=1e-12)


def quantize(x, scale):
    return torch.clamp(x * scale, -E4M3_MAX_POS, E4M3_MAX_POS)


class Float8Linear(nn.Linear):
    def __init__(self, in_features, out_features):
        super().__init__(in_features, out_features)
        self.fp8_amax_x = torch.ones(())
        self.fp8_scale_x = amax_to_scale(self.fp8_amax_x)

    def forward(self, x):
        fp8_scale_w = amax_to_scale(torch.max(torch.abs(self.weight)))
        x_fp8 = quantize(x, self.fp8_scale_x)
        w_fp8 = quantize(self.weight, fp8_scale_w)
        y = F.linear(x_fp8, w_fp8) / (self.fp8_scale_x * fp8_scale_w) + self.bias

        self.fp8_amax_x = torch.max(torch.abs(x))
        self.fp8_scale_x = amax_to_scale(self.fp8_amax_x)
        return y


model = nn.Sequential(Float8Linear(8, 16), nn.ReLU(), Float8Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for step in range(3):
    x = torch.randn(4, 8)
    target = torch.randn(4, 4)
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), target)
    loss.backward()
    optimizer.step()
