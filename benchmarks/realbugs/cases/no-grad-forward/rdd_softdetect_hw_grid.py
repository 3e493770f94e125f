import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class SoftDetect(nn.Module):
    def __init__(self, radius=2, top_k=16, temperature=0.1):
        super().__init__()
        self.radius = radius
        self.top_k = top_k
        self.temperature = temperature
        self.kernel_size = 2 * self.radius + 1
        self.unfold = nn.Unfold(kernel_size=self.kernel_size, padding=self.radius)
        self.hw_grid = None

    def detect_keypoints(self, scores_map):
        b, c, h, w = scores_map.shape
        if self.hw_grid is None:
            x = torch.linspace(-self.radius, self.radius, self.kernel_size)
            self.hw_grid = torch.stack(torch.meshgrid([x, x], indexing="ij")).view(2, -1).t()[:, [1, 0]]
        flat = scores_map.view(b, -1)
        _, idx = flat.topk(self.top_k, dim=1)
        patches = self.unfold(scores_map)
        kps, scores = [], []
        for i in range(b):
            patch = patches[i].t()[idx[i]]
            max_v = patch.max(dim=1).values.detach()[:, None]
            x_exp = ((patch - max_v) / self.temperature).exp()
            xy_residual = x_exp @ self.hw_grid / x_exp.sum(dim=1)[:, None]
            yx = torch.stack([idx[i] // w, idx[i] % w], dim=1).float()
            kps.append(yx + xy_residual)
            scores.append((patch * x_exp).sum(dim=1) / x_exp.sum(dim=1))
        return kps, scores


class RDD(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
        self.softdetect = SoftDetect()

    def forward(self, img):
        return {"scores_map": torch.sigmoid(self.backbone(img))}


model = RDD()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)


@torch.inference_mode()
def validate(model, images):
    pred = model(images)
    kps, scores = model.softdetect.detect_keypoints(pred["scores_map"])
    return sum(s.mean() for s in scores) / len(scores)


val_images = torch.rand(2, 1, 16, 16)
train_images = torch.rand(2, 1, 16, 16)
target_kps = torch.rand(2, 16, 2) * 16

for step in range(4):
    if step % 2 == 0:
        validate(model, val_images)
    pred0 = model(train_images)
    kps, scores = model.softdetect.detect_keypoints(pred0["scores_map"])
    loss = sum(F.l1_loss(k, t) for k, t in zip(kps, target_kps))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
