import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class DenseNet2(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 2))

    def forward(self, x):
        return self.layers(x)


torch.manual_seed(0)
densenet2 = DenseNet2()
densenet2.double()
criterion = nn.MSELoss()
optimizer = torch.optim.LBFGS(params=densenet2.parameters(), lr=0.5, max_iter=5)
inputs = torch.randn(32, 4, dtype=torch.float64)
outputs = torch.stack([inputs[:, 0] * inputs[:, 1], inputs[:, 2] - inputs[:, 3]], dim=1)
data_gen = TensorDataset(inputs, outputs)
dataset = DataLoader(dataset=data_gen, batch_size=16, shuffle=True)
epochs = 3
for epoch in range(epochs):
    for data in dataset:
        optimizer.zero_grad()
        input, output = data

        def closure():
            optimizer.zero_grad()
            pred_output = densenet2(input)
            loss = criterion(pred_output, output)
            loss.backward()
            return loss
        optimizer.step(closure=closure)
    with torch.no_grad():
        print(epoch, criterion(densenet2(inputs), outputs).item())
