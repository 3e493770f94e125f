import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)

symbols = "<>abc()"


class Net(nn.Module):
    def __init__(self, hiddenSize):
        super(Net, self).__init__()
        self.hiddenSize = hiddenSize
        self.rnn = nn.RNN(len(symbols), hiddenSize, batch_first=True)
        self.out = nn.Linear(hiddenSize, 2)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.out(self.forwardFancyStuff(h))

    def forwardFancyStuff(self, h):
        return h[:, -1]


class Net2(Net):
    def __init__(self, hiddenSize):
        super(Net2, self).__init__(hiddenSize)
        self.memory = nn.Linear(hiddenSize, hiddenSize)

    def forwardFancyStuff(self, h):
        return torch.tanh(self.memory(h.mean(1)))


def make_batch(n, length=8):
    idx = torch.randint(0, len(symbols), (n, length))
    x = torch.nn.functional.one_hot(idx, len(symbols)).float()
    y = ((idx == 5).sum(1) == (idx == 6).sum(1)).long()
    return x, y


net1 = Net(16)
optimizer = optim.Adam(net1.parameters(), lr=3e-2)

print("================================================")
x_val, y_val = make_batch(16)

net1 = Net2(16)
criterion = nn.CrossEntropyLoss()
for epoch in range(5):
    x, y = make_batch(32)
    optimizer.zero_grad()
    loss = criterion(net1(x), y)
    loss.backward()
    optimizer.step()
    print(epoch, loss.item())
