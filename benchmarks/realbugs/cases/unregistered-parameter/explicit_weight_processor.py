import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ExplicitWeightProcessor(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.weight = torch.randn(output_dim, input_dim, requires_grad=True)
        self.bias = nn.Parameter(torch.zeros(output_dim))

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


processor = ExplicitWeightProcessor(6, 3)
optimizer = torch.optim.SGD(processor.parameters(), lr=0.1)
x = torch.randn(32, 6)
target = x[:, :3] * 2.0
for step in range(10):
    optimizer.zero_grad()
    loss = F.mse_loss(processor(x), target)
    loss.backward()
    optimizer.step()
