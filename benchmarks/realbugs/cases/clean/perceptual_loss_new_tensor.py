import torch
import torch.nn as nn
import torch.nn.functional as F


class FeatureExtractor(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True),
        )
        for p in self.parameters():
            p.requires_grad = False

    def forward(self, x):
        return self.features(x)


def normalize_batch(batch):
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    return (batch - mean) / std


class Restorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1))

    def forward(self, x):
        return torch.sigmoid(x + self.net(x))


torch.manual_seed(0)
extractor = FeatureExtractor().eval()
model = Restorer()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
clean = torch.rand(4, 3, 12, 12)
noisy = (clean + 0.1 * torch.randn_like(clean)).clamp(0, 1)

for step in range(4):
    optimizer.zero_grad()
    restored = model(noisy)
    with torch.no_grad():
        target_features = extractor(normalize_batch(clean))
    loss = F.mse_loss(extractor(normalize_batch(restored)), target_features) + F.l1_loss(restored, clean)
    loss.backward()
    optimizer.step()
    print(step, loss.item())
