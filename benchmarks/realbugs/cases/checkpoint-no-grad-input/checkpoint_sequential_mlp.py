import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint_sequential

torch.manual_seed(0)

model = nn.Sequential(
    nn.Linear(8, 16), nn.ReLU(),
    nn.Linear(16, 16), nn.ReLU(),
    nn.Linear(16, 16), nn.ReLU(),
    nn.Linear(16, 4),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
criterion = nn.MSELoss()
for it in range(4):
    input_var = torch.randn(32, 8)
    target = torch.randn(32, 4)
    output = checkpoint_sequential(model, 2, input_var, use_reentrant=True)
    loss = criterion(output, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
