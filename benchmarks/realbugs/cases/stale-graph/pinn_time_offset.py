import torch
import torch.nn as nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x, t):
        return self.layers(torch.cat([x, t], dim=1))


net = Net()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.rand(20, 1, requires_grad=True)
t = 1 + 3 * torch.rand(20, 1, requires_grad=True)

for epoch in range(5):
    optimizer.zero_grad()
    loss = torch.mean(torch.square(net(x, t)))
    loss.backward()
    optimizer.step()
