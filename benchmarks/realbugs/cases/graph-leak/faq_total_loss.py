import torch
import torch.nn as nn

torch.manual_seed(0)

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
input = torch.randn(16, 10)
target = torch.randn(16, 1)

total_loss = 0
for i in range(20):
    optimizer.zero_grad()
    output = model(input)
    loss = criterion(output, target)
    loss.backward()
    optimizer.step()
    total_loss += loss

print("mean loss", total_loss.item() / 20)
