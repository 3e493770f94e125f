import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
X = torch.randn(40, 6)
Y = X[:, :1] * 2 - X[:, 1:2]
dataset = DataLoader(TensorDataset(X, Y), batch_size=10, shuffle=True)

for epoch in range(3):
    for input, target in dataset:
        def closure():
            optimizer.zero_grad()
            output = model(input)
            loss = loss_fn(output, target)
            loss.backward()
            return loss
        loss = optimizer.step(closure)
    print(epoch, loss.item())
