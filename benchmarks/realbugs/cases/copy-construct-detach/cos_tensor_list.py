import torch

torch.manual_seed(0)

a = torch.tensor(0.0)
b = torch.tensor(0.0)
a.requires_grad = True
b.requires_grad = True
optimizer = torch.optim.SGD([a, b], lr=0.1)

mat = torch.tensor([
    [1.0, 2.0],
    [3.0, 4.0]
])

for step in range(3):
    optimizer.zero_grad()
    cosa = torch.cos(a)
    cosb = torch.cos(b)
    y1 = cosa + cosb
    y2 = torch.tensor([
        cosa, cosb
    ])
    y2 = torch.matmul(y2, mat)
    y2.sum().backward()
    optimizer.step()
