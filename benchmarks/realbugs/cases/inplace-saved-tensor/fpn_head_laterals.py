import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvModule(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding=0):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        self.activate = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.activate(self.bn(self.conv(x)))


class FPN_Head(nn.Module):
    def __init__(self, in_channels=(8, 16, 32), channels=8, num_classes=3):
        super().__init__()
        self.lateral_convs = nn.ModuleList()
        self.fpn_convs = nn.ModuleList()
        for in_channel in in_channels:
            self.lateral_convs.append(ConvModule(in_channel, channels, 1))
            self.fpn_convs.append(ConvModule(channels, channels, 3, padding=1))
        self.cls_seg = nn.Conv2d(channels * len(in_channels), num_classes, 1)

    def forward(self, inputs):
        laterals = [lateral_conv(inputs[i]) for i, lateral_conv in enumerate(self.lateral_convs)]
        used_backbone_levels = len(laterals)
        for i in range(used_backbone_levels - 1, 0, -1):
            prev_shape = laterals[i - 1].shape[2:]
            laterals[i - 1] += F.interpolate(laterals[i], size=prev_shape, mode='nearest')
        fpn_outs = [self.fpn_convs[i](laterals[i]) for i in range(used_backbone_levels)]
        for i in range(used_backbone_levels - 1, 0, -1):
            fpn_outs[i] = F.interpolate(fpn_outs[i], size=fpn_outs[0].shape[2:], mode='bilinear', align_corners=False)
        return self.cls_seg(torch.cat(fpn_outs, dim=1))


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.stage2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.stage3 = nn.Conv2d(16, 32, 3, stride=2, padding=1)

    def forward(self, x):
        c1 = self.stage1(x)
        c2 = self.stage2(c1)
        c3 = self.stage3(c2)
        return [c1, c2, c3]


torch.manual_seed(0)
backbone = Backbone()
head = FPN_Head()
params = list(backbone.parameters()) + list(head.parameters())
optimizer = torch.optim.SGD(params, lr=0.01)
img = torch.randn(2, 3, 32, 32)
den_map = torch.rand(2, 3, 16, 16)

for it in range(2):
    pred = head(backbone(img))
    loss = F.mse_loss(pred, den_map)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
