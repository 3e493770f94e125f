import torch
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)

m = torch.nn.Linear(4, 3)
optimizer = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(10, 4)
    target = torch.randn(10, 3)
    z1 = checkpoint(lambda _: m(_), x, use_reentrant=True)
    loss = torch.nn.functional.mse_loss(z1, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
