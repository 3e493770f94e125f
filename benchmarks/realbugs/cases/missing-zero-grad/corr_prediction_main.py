import torch
import torch.nn as nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, in_dim=10, hidden=32, n_classes=4):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
inputs = torch.randn(64, 10)
targets = torch.randint(0, 4, (64,))
train_loader = [(inputs[i:i + 16], targets[i:i + 16]) for i in range(0, 64, 16)]


def train(epoch):
    model.train()
    optimizer.zero_grad()
    for batch_idx, (data, target) in enumerate(train_loader):
        output = model(data)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()


for epoch in range(1, 4):
    train(epoch)
