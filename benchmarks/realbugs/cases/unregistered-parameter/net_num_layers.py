import torch
import torch.nn as nn

torch.manual_seed(0)


class net(nn.Module):
    def __init__(self, num_layers):
        super(net, self).__init__()
        self.layer = nn.Linear(1, 1)
        self.list_of_layers = [nn.Linear(1, 1) for i in range(num_layers)]

    def forward(self, x):
        x = self.layer(x)
        for layer in self.list_of_layers:
            x = layer(torch.tanh(x))
        return x


n = net(4)
optimizer = torch.optim.SGD(n.parameters(), lr=0.05)
criterion = nn.MSELoss()
x = torch.linspace(-1, 1, 32).unsqueeze(1)
y = 0.5 * x
for epoch in range(10):
    optimizer.zero_grad()
    loss = criterion(n(x), y)
    loss.backward()
    optimizer.step()
