import torch

torch.manual_seed(0)

A = torch.tensor([3., 4., 5., 6.], requires_grad=True)
THRES = torch.tensor([4.], requires_grad=True)
target = torch.tensor(7.0)

optimizer = torch.optim.SGD([A, THRES], lr=0.01)

for step in range(5):
    optimizer.zero_grad()
    kept = A[A > THRES]
    loss = (kept.sum() - target) ** 2
    loss.backward()
    optimizer.step()
    print(step, loss.item(), THRES.item())
