import torch
import torch.nn as nn

torch.manual_seed(0)


class CountRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        out = self.fc2(torch.relu(self.fc1(x)))
        return torch.round(out * 100) / 100


model = CountRegressor()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
criterion = nn.MSELoss()
x = torch.randn(32, 5)
y = x.sum(1, keepdim=True)

for epoch in range(4):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    print(epoch, loss.item())
