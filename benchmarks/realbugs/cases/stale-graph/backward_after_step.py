import torch

torch.manual_seed(0)

model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(2, 3, requires_grad=True)
y = model(x)

loss = y.sum()
loss.backward()
optimizer.step()

loss.backward()
optimizer.step()
