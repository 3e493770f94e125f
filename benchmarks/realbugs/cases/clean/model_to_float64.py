import math

import torch
import torch.nn as nn


class PINN(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                 nn.Linear(hidden, 1))

    def forward(self, t):
        return self.net(t)


torch.manual_seed(0)
model = PINN().to(torch.float64)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

t = torch.linspace(0, 1, 32, dtype=torch.float64).unsqueeze(1).requires_grad_(True)
t0 = torch.zeros(1, 1, dtype=torch.float64)

for it in range(8):
    optimizer.zero_grad()
    u = model(t)
    du_dt = torch.autograd.grad(u, t, grad_outputs=torch.ones_like(u), create_graph=True)[0]
    residual = du_dt + 2.0 * u
    loss = residual.pow(2).mean() + (model(t0) - 1.0).pow(2).mean()
    loss.backward()
    optimizer.step()
    print(it, loss.item())

with torch.no_grad():
    print(float(model(torch.ones(1, 1, dtype=torch.float64))), math.exp(-2.0))
