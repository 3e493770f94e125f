import torch
from torch.distributions import Bernoulli

torch.manual_seed(0)

p = torch.tensor(0.2, requires_grad=True)
optimizer = torch.optim.SGD([p], lr=0.01)

for step in range(2):
    pi = Bernoulli(p)

    l1 = 2 * pi.log_prob(torch.tensor(1.0))
    l2 = 3 * pi.log_prob(torch.tensor(0.0))

    optimizer.zero_grad()
    l1.backward()
    l2.backward()
    optimizer.step()
