import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class CharbonnierLoss(nn.Module):
    def __init__(self, eps=1e-3):
        super(CharbonnierLoss, self).__init__()
        self.eps = eps

    def forward(self, x, y):
        diff = x - y
        return torch.mean(torch.sqrt((diff * diff) + (self.eps * self.eps)))


class EdgeLoss(nn.Module):
    def __init__(self):
        super(EdgeLoss, self).__init__()
        k = torch.Tensor([[.05, .25, .4, .25, .05]])
        self.kernel = torch.matmul(k.t(), k).unsqueeze(0).repeat(3, 1, 1, 1)
        self.loss = CharbonnierLoss()

    def conv_gauss(self, img):
        img = F.pad(img, (2, 2, 2, 2), mode='replicate')
        return F.conv2d(img, self.kernel, groups=3)

    def laplacian_kernel(self, current):
        filtered = self.conv_gauss(current)
        return current - filtered

    def forward(self, x, y):
        return self.loss(self.laplacian_kernel(x), self.laplacian_kernel(y))


class DGUNet(nn.Module):
    def __init__(self, n_feat=8, depth=3):
        super(DGUNet, self).__init__()
        self.stages = nn.ModuleList([
            nn.Sequential(nn.Conv2d(3, n_feat, 3, padding=1), nn.ReLU(), nn.Conv2d(n_feat, 3, 3, padding=1))
            for _ in range(depth)])

    def forward(self, x):
        restored = []
        img = x
        for stage in self.stages:
            img = img + stage(img)
            restored.insert(0, img)
        return restored


model_restoration = DGUNet()
optimizer = torch.optim.Adam(model_restoration.parameters(), lr=2e-4)
criterion_char = CharbonnierLoss()
criterion_edge = EdgeLoss()
input_ = torch.rand(2, 3, 16, 16)
target = (input_ + 0.1 * torch.randn(2, 3, 16, 16)).clamp(0, 1)
for epoch in range(4):
    optimizer.zero_grad()
    restored = model_restoration(input_)
    loss_char = torch.tensor([criterion_char(restored[j], target) for j in range(len(restored))],requires_grad=True).sum()
    loss_edge = torch.tensor([criterion_edge(restored[j], target) for j in range(len(restored))],requires_grad=True).sum()
    loss = (loss_char) + (0.05*loss_edge)
    loss.backward()
    optimizer.step()
