import torch
import torch.nn as nn


class ConvLayer(nn.Sequential):
    def __init__(self, in_channels, out_channels, kernel=3, stride=1):
        super().__init__()
        self.add_module('conv', nn.Conv2d(in_channels, out_channels, kernel_size=kernel,
                                          stride=stride, padding=kernel // 2, bias=False))
        self.add_module('norm', nn.BatchNorm2d(out_channels))
        self.add_module('relu', nn.ReLU(inplace=True))


class hardnet(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.base = nn.Sequential(ConvLayer(3, 8, stride=2), ConvLayer(8, 16), ConvLayer(16, 16))
        self.finalConv = nn.Conv2d(16, n_classes, kernel_size=1)

    def forward(self, x):
        return self.finalConv(self.base(x))


def fuse_bn(conv, bn):
    std = (bn.running_var + bn.eps).sqrt()
    W = conv.weight * (bn.weight / std).reshape(-1, 1, 1, 1)
    b = bn.bias - bn.running_mean * bn.weight / std
    return W, b


torch.manual_seed(0)
model = hardnet()
model.train()
with torch.no_grad():
    for _ in range(3):
        model(torch.randn(4, 3, 16, 16))
model.eval()

images = torch.randn(1, 3, 16, 16)
ref = model(images)
for name, m in model.named_modules():
    if isinstance(m, ConvLayer):
        cconv = m.conv
        W, b = fuse_bn(cconv, m.norm)
        cconv.weight[:, :, :, :] = W[:, :, :, :]
        cconv.bias = nn.Parameter(b)
        m.norm = nn.Identity()
outputs = model(images)
print((outputs - ref).abs().max().item())
