import torch
import torch.nn as nn


class FCN(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
            nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
        )
        self.score = nn.Conv2d(8, num_classes, 1)

    def forward(self, x):
        return self.score(self.features(x))


torch.manual_seed(0)
model = FCN()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
logsoftmax = nn.LogSoftmax(dim=1)
criterion = torch.nn.NLLLoss(reduce=False)

inputs = torch.randn(2, 3, 16, 16)
labels = torch.randint(0, 3, (2, 16, 16))
for epoch in range(2):
    optimizer.zero_grad()
    outputs = model(inputs)
    outputs = logsoftmax(outputs)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
