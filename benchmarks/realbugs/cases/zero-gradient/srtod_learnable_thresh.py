import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Flatten(nn.Module):
    def forward(self, x):
        return x.view(x.size(0), -1)


class RH(nn.Module):
    def __init__(self, in_channels=16, out_channels=3):
        super(RH, self).__init__()
        self.up1 = nn.ConvTranspose2d(in_channels, 8, kernel_size=4, stride=2, padding=1)
        self.out_conv = nn.Sequential(nn.Conv2d(8, out_channels, kernel_size=3, stride=1, padding=1), nn.Sigmoid())

    def forward(self, x):
        return self.out_conv(F.relu(self.up1(x)))


class DGFE(nn.Module):
    def __init__(self, gate_channels=16, reduction_ratio=4, pool_types=['avg', 'max']):
        super(DGFE, self).__init__()
        self.mlp = nn.Sequential(
            Flatten(),
            nn.Linear(gate_channels, gate_channels // reduction_ratio),
            nn.ReLU(),
            nn.Linear(gate_channels // reduction_ratio, gate_channels)
        )
        self.pool_types = pool_types

    def forward(self, x, difference_map, learnable_thresh):
        difference_map_mask = (torch.sign(difference_map - learnable_thresh) + 1) * 0.5
        feat_difference_map = torch.nn.functional.interpolate(difference_map_mask, size=(x.shape[2], x.shape[3]))
        channel_att_sum = None
        for pool_type in self.pool_types:
            if pool_type == 'avg':
                avg_pool = F.avg_pool2d(x, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
                channel_att_raw = self.mlp(avg_pool)
            elif pool_type == 'max':
                max_pool = F.max_pool2d(x, (x.size(2), x.size(3)), stride=(x.size(2), x.size(3)))
                channel_att_raw = self.mlp(max_pool)
            if channel_att_sum is None:
                channel_att_sum = channel_att_raw
            else:
                channel_att_sum = channel_att_sum + channel_att_raw
        scale = torch.sigmoid(channel_att_sum).unsqueeze(2).unsqueeze(3).expand_as(x)
        feat_diff_mat = feat_difference_map.repeat(1, x.shape[1], 1, 1)
        x_out = x * scale
        x_out = torch.mul(x_out, feat_diff_mat) + x_out
        return x_out


class SRTOD(nn.Module):
    def __init__(self, learnable_thresh=0.0156862):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Conv2d(16, 1, 1)
        self.rh = RH()
        self.dgfe = DGFE()
        self.learnable_thresh = torch.nn.Parameter(torch.tensor(learnable_thresh), requires_grad=True)

    def loss(self, batch_inputs, heatmap):
        x = [self.backbone(batch_inputs)]
        r_img = self.rh(x[0].clone())
        difference_map = torch.sum(torch.abs(r_img - batch_inputs), dim=1, keepdim=True) / 3
        x[0] = self.dgfe(x[0], difference_map, self.learnable_thresh)
        losses = dict()
        losses['loss_res'] = F.l1_loss(r_img, batch_inputs)
        losses['loss_det'] = F.binary_cross_entropy_with_logits(self.head(x[0]), heatmap)
        return losses


model = SRTOD()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
images = torch.rand(4, 3, 16, 16)
heatmap = (torch.rand(4, 1, 8, 8) > 0.9).float()
for it in range(4):
    optimizer.zero_grad()
    losses = model.loss(images, heatmap)
    loss = sum(losses.values())
    loss.backward()
    optimizer.step()
print(float(model.learnable_thresh), loss.item())
