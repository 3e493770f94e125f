import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc(x.mean((2, 3)))


class ModelSpeedup:
    def __init__(self, model, dummy_input, masks):
        self.bound_model = model
        self.dummy_input = dummy_input
        self.masks = masks

    def speedup_model(self):
        keep = self.masks["conv1"].nonzero().flatten()
        old1, old2 = self.bound_model.conv1, self.bound_model.conv2
        new1 = nn.Conv2d(old1.in_channels, len(keep), 3, padding=1)
        new1.weight.data = old1.weight.data[keep].clone()
        new1.bias.data = old1.bias.data[keep].clone()
        new2 = nn.Conv2d(len(keep), old2.out_channels, 3, padding=1)
        new2.weight.data = old2.weight.data[:, keep].clone()
        new2.bias.data = old2.bias.data.clone()
        self.bound_model.conv1 = new1
        self.bound_model.conv2 = new2
        self.bound_model(self.dummy_input)


def trainer(model, optimizer, criterion, data):
    model.train()
    for x, y in data:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    return loss.item()


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
criterion = nn.CrossEntropyLoss()
data = [(torch.randn(4, 3, 8, 8), torch.randint(0, 4, (4,))) for _ in range(3)]
trainer(model, optimizer, criterion, data)

norms = model.conv1.weight.detach().abs().sum((1, 2, 3))
masks = {"conv1": (norms >= norms.median()).float()}
dummy_input = torch.randn(1, 3, 8, 8)
m_speedup = ModelSpeedup(model, dummy_input, masks)
m_speedup.speedup_model()

print('start finetuning...')
for epoch in range(3):
    print(epoch, trainer(model, optimizer, criterion, data))
