import torch
import torch.nn as nn

torch.manual_seed(0)


class MaskedNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 3)
        self.threshold = nn.Parameter(torch.tensor(2.))

    def forward(self, points):
        X = self.proj(points)
        return X[X.norm(dim=1) < self.threshold].norm(dim=1).mean()


model = MaskedNorm()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
points = torch.randn(1000, 3)

for step in range(5):
    optimizer.zero_grad()
    loss = model(points)
    loss.backward()
    optimizer.step()
    print(step, loss.item(), model.threshold.item())
