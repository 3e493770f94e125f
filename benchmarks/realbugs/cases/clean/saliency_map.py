import torch
import torch.nn as nn


class SmallVGG(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(16, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


torch.manual_seed(0)
model = SmallVGG()
for param in model.parameters():
    param.requires_grad = False
model.eval()

X = torch.rand(1, 3, 16, 16)
X.requires_grad_()

scores = model(X)
score_max_index = scores.argmax()
score_max = scores[0, score_max_index]
score_max.backward()

saliency, _ = torch.max(X.grad.data.abs(), dim=1)
print(saliency.shape, float(saliency.max()))
