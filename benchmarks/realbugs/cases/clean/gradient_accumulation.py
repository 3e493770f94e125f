import torch
import torch.nn as nn
from torch.utils.data import TensorDataset

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
loss_function = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
training_set = torch.utils.data.DataLoader(
    TensorDataset(torch.randn(64, 10), torch.randint(0, 2, (64,))), batch_size=8, shuffle=True)
accumulation_steps = 4

for epoch in range(2):
    model.zero_grad()
    for i, (inputs, labels) in enumerate(training_set):
        predictions = model(inputs)
        loss = loss_function(predictions, labels)
        loss = loss / accumulation_steps
        loss.backward()
        if (i+1) % accumulation_steps == 0:
            optimizer.step()
            model.zero_grad()
    print(epoch, loss.item() * accumulation_steps)
