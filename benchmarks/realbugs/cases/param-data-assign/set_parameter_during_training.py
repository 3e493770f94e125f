import torch
import torch.nn as nn

torch.manual_seed(0)

model = nn.Linear(10, 10)
optimizer = torch.optim.Adam(model.parameters(), lr=1.)

for step in range(5):
    out = model(torch.randn(1, 10))
    out.mean().backward()
    optimizer.step()
    optimizer.zero_grad()
    model.weight.data = torch.ones_like(model.weight)
