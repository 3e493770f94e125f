import torch
import torch.nn as nn
from torch.autograd import Variable
from torch.nn.modules.loss import _Loss

torch.manual_seed(0)


class IoU_real(_Loss):
    def __init__(self):
        super(_Loss, self).__init__()
        bounds = (32, 32)
        grid = torch.meshgrid(torch.arange(bounds[0]), torch.arange(bounds[1]), indexing='ij')
        self.grid = Variable(torch.stack(grid, dim=-1).float())

    def score_map(self, rect):
        x1, y1, x2, y2 = rect[0], rect[1], rect[2], rect[3]
        inside_x = (self.grid[..., 0] >= x1) * (self.grid[..., 0] <= x2)
        inside_y = (self.grid[..., 1] >= y1) * (self.grid[..., 1] <= y2)
        return (inside_x * inside_y).float()

    def forward(self, input, target):
        loss = 0
        for i in range(input.size(0)):
            m_in = self.score_map(input[i])
            m_t = self.score_map(target[i])
            intersection = (m_in * m_t).sum()
            union = m_in.sum() + m_t.sum() - intersection
            loss = loss + 1 - intersection / (union + 1e-6)
        return loss / input.size(0)


net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
criterion = IoU_real()

features = torch.randn(4, 16)
boxes = torch.tensor([[2., 3., 20., 25.], [5., 5., 10., 30.], [0., 0., 31., 31.], [8., 2., 16., 12.]])

for step in range(3):
    optimizer.zero_grad()
    output = net(features) * 10 + 16
    loss = criterion(output, boxes)
    loss.backward()
    optimizer.step()
