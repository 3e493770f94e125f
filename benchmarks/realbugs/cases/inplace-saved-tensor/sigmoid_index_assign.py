import torch

torch.manual_seed(0)
a = torch.tensor([1, 2, 3.], requires_grad=True)
optimizer = torch.optim.SGD([a], lr=0.1)

for step in range(3):
    optimizer.zero_grad()
    b = a.sigmoid()
    b[1] = 2
    loss = b.sum()
    loss.backward()
    optimizer.step()
    print(step, a)
