import torch
import torch.nn as nn

torch.manual_seed(0)


class SimpleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 5)
        self.fc2 = nn.Linear(5, 2)

    def forward(self, x):
        x = self.fc1(x)
        x = self.fc2(x)
        return x


model = SimpleNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for param in model.fc1.parameters():
    param.requires_grad = False

criterion = nn.CrossEntropyLoss()
X = torch.randn(16, 10)
y = torch.randint(0, 2, (16,))
for epoch in range(5):
    optimizer.zero_grad()
    loss = criterion(model(X), y)
    loss.backward()
    optimizer.step()
