import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SeparableConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.depthwise_conv = nn.Conv2d(in_channels, in_channels, 3, padding=1, stride=stride, groups=in_channels)
        self.pointwise_conv = nn.Conv2d(in_channels, out_channels, 1)
        self.bn = nn.BatchNorm2d(out_channels)
        self.act = nn.ReLU()

    def forward(self, x):
        x = self.depthwise_conv(x)
        x = self.pointwise_conv(x)
        x = self.bn(x)
        x = self.act(x)
        return x


class FPEM(nn.Module):
    def __init__(self, in_channels=8):
        super().__init__()
        self.up_add1 = SeparableConv2d(in_channels, in_channels, 1)
        self.up_add2 = SeparableConv2d(in_channels, in_channels, 1)
        self.up_add3 = SeparableConv2d(in_channels, in_channels, 1)
        self.down_add1 = SeparableConv2d(in_channels, in_channels, 2)
        self.down_add2 = SeparableConv2d(in_channels, in_channels, 2)
        self.down_add3 = SeparableConv2d(in_channels, in_channels, 2)

    def forward(self, c2, c3, c4, c5):
        c4 = self.up_add1(self._upsample_add(c5, c4))
        c3 = self.up_add2(self._upsample_add(c4, c3))
        c2 = self.up_add3(self._upsample_add(c3, c2))
        c3 = self.down_add1(self._upsample_add(c3, c2))
        c4 = self.down_add2(self._upsample_add(c4, c3))
        c5 = self.down_add3(self._upsample_add(c5, c4))
        return c2, c3, c4, c5

    def _upsample_add(self, x, y):
        return F.interpolate(x, size=y.size()[2:]) + y


class FPEM_FFM(nn.Module):
    def __init__(self, in_channels=(8, 16, 32, 64), conv_out=8, fpem_repeat=2):
        super().__init__()
        self.reduce_conv_c2 = nn.Sequential(nn.Conv2d(in_channels[0], conv_out, 1), nn.BatchNorm2d(conv_out), nn.ReLU())
        self.reduce_conv_c3 = nn.Sequential(nn.Conv2d(in_channels[1], conv_out, 1), nn.BatchNorm2d(conv_out), nn.ReLU())
        self.reduce_conv_c4 = nn.Sequential(nn.Conv2d(in_channels[2], conv_out, 1), nn.BatchNorm2d(conv_out), nn.ReLU())
        self.reduce_conv_c5 = nn.Sequential(nn.Conv2d(in_channels[3], conv_out, 1), nn.BatchNorm2d(conv_out), nn.ReLU())
        self.fpems = nn.ModuleList([FPEM(conv_out) for _ in range(fpem_repeat)])

    def forward(self, x):
        c2, c3, c4, c5 = x
        c2 = self.reduce_conv_c2(c2)
        c3 = self.reduce_conv_c3(c3)
        c4 = self.reduce_conv_c4(c4)
        c5 = self.reduce_conv_c5(c5)
        for i, fpem in enumerate(self.fpems):
            c2, c3, c4, c5 = fpem(c2, c3, c4, c5)
            if i == 0:
                c2_ffm = c2
                c3_ffm = c3
                c4_ffm = c4
                c5_ffm = c5
            else:
                c2_ffm += c2
                c3_ffm += c3
                c4_ffm += c4
                c5_ffm += c5
        c5 = F.interpolate(c5_ffm, c2_ffm.size()[-2:], mode='nearest')
        c4 = F.interpolate(c4_ffm, c2_ffm.size()[-2:], mode='nearest')
        c3 = F.interpolate(c3_ffm, c2_ffm.size()[-2:], mode='nearest')
        return torch.cat([c2_ffm, c3, c4, c5], dim=1)


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.layer2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.layer3 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.layer4 = nn.Conv2d(32, 64, 3, stride=2, padding=1)

    def forward(self, x):
        c2 = self.layer1(x)
        c3 = self.layer2(c2)
        c4 = self.layer3(c3)
        c5 = self.layer4(c4)
        return c2, c3, c4, c5


backbone = Backbone()
neck = FPEM_FFM()
head = nn.Conv2d(32, 2, 1)
params = list(backbone.parameters()) + list(neck.parameters()) + list(head.parameters())
optimizer = torch.optim.SGD(params, lr=0.001, momentum=0.99)
for step in range(2):
    img = torch.randn(2, 3, 32, 32)
    gt_kernels = torch.rand(2, 2, 16, 16)
    preds = head(neck(backbone(img)))
    loss = F.binary_cross_entropy_with_logits(preds, gt_kernels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
