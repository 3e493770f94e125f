import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.fc1 = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 1)
        return self.fc1(x.flatten(1))


def train_one_epoch(net, trainloader, criterion, optimizer, history):
    running_loss = 0.0
    for i, (inputs, labels) in enumerate(trainloader):
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss
    history.append(running_loss / len(trainloader))
    return running_loss


net = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
trainloader = [(torch.rand(4, 1, 8, 8), torch.randint(0, 10, (4,))) for _ in range(4)]
history = []
for epoch in range(3):
    running_loss = train_one_epoch(net, trainloader, criterion, optimizer, history)
    print("[%d] loss: %.3f" % (epoch + 1, running_loss / len(trainloader)))
