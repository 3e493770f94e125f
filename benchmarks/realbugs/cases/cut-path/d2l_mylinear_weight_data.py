import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units))
        self.bias = nn.Parameter(torch.randn(units,))

    def forward(self, X):
        linear = torch.matmul(X, self.weight.data) + self.bias.data
        return F.relu(linear)


net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), MyLinear(64, 8), nn.Linear(8, 1))

X = torch.rand(64, 20)
y = X.sum(dim=1, keepdim=True)
loss = nn.MSELoss()
trainer = torch.optim.SGD(net.parameters(), lr=0.001)

num_epochs = 5
for epoch in range(num_epochs):
    for i in range(0, 64, 16):
        l = loss(net(X[i:i + 16]), y[i:i + 16])
        trainer.zero_grad()
        l.backward()
        trainer.step()
    print(f'epoch {epoch + 1}, loss {loss(net(X), y).item():f}')
