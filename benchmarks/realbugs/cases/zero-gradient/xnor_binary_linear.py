import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class BinaryLinear(nn.Linear):
    def forward(self, x):
        return F.linear(x, self.weight.sign(), self.bias)


class BinaryMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = BinaryLinear(20, 32)
        self.bn = nn.BatchNorm1d(32)
        self.fc2 = BinaryLinear(32, 4)

    def forward(self, x):
        return self.fc2(torch.tanh(self.bn(self.fc1(x))))


model = BinaryMLP()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
data = torch.randn(64, 20)
target = torch.randint(0, 4, (64,))

for epoch in range(4):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(data), target)
    loss.backward()
    optimizer.step()
    print(epoch, loss.item())
