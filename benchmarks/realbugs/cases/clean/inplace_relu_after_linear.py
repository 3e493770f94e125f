import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.bn2 = nn.BatchNorm1d(hidden)
        self.fc3 = nn.Linear(hidden, out_features)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.fc1(x)
        x.relu_()
        x = self.bn2(self.fc2(x))
        x = self.act(x)
        x = self.fc3(x)
        return x


torch.manual_seed(0)
model = MLP(8, 16, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
x = torch.randn(32, 8)
y = torch.randint(0, 3, (32,))
for epoch in range(5):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    print(epoch, loss.item())
