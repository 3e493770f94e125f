import torch

torch.manual_seed(0)

x = torch.nn.Linear(3, 3)
a = torch.randn(2, 3)
y = torch.sum(x(a))
for i in range(100):
    y.backward()
