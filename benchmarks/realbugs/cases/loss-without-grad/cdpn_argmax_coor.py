import torch
import torch.nn as nn

torch.manual_seed(0)


class CoorHead(nn.Module):
    def __init__(self, coor_bin=64):
        super().__init__()
        self.conv = nn.Conv2d(8, 3 * (coor_bin + 1), 1)
        self.coor_bin = coor_bin

    def forward(self, feat):
        out = self.conv(feat)
        n = self.coor_bin + 1
        return out[:, :n], out[:, n:2 * n], out[:, 2 * n:]


class cfg:
    class network:
        coor_bin = 64


model = CoorHead(cfg.network.coor_bin)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.L1Loss()

feat = torch.randn(1, 8, 16, 16)
gt_coor = torch.rand(16, 16, 3) * 2 - 1

for epoch in range(3):
    output_coor_x_, output_coor_y_, output_coor_z_ = model(feat)
    output_coor_x_ = output_coor_x_.squeeze()
    output_coor_y_ = output_coor_y_.squeeze()
    output_coor_z_ = output_coor_z_.squeeze()

    output_coor_ = torch.stack([torch.argmax(output_coor_x_, axis=0),
                                torch.argmax(output_coor_y_, axis=0),
                                torch.argmax(output_coor_z_, axis=0)], axis=2)
    output_coor_[output_coor_ == cfg.network.coor_bin] = 0
    output_coor_ = 2.0 * output_coor_.float() / (63.0 - 1.0) - 1.0

    loss = criterion(output_coor_, gt_coor)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
