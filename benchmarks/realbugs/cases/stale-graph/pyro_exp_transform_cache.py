import torch
from torch.distributions import Normal, TransformedDistribution
from torch.distributions.transforms import ExpTransform

torch.manual_seed(0)

data = torch.randn(64).exp() * 1.5

x = torch.zeros(1, requires_grad=True)
loc = torch.zeros(1, requires_grad=True)
t = ExpTransform(cache_size=1)
optimizer = torch.optim.Adam([x, loc], lr=0.05)

for step in range(5):
    optimizer.zero_grad()
    scale = t(x)
    dist = TransformedDistribution(Normal(loc, scale), [ExpTransform()])
    loss = -dist.log_prob(data).mean()
    loss.backward()
    optimizer.step()
