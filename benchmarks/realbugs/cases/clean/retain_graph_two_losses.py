import torch
import torch.nn as nn


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())
        self.head1 = nn.Linear(16, 3)
        self.head2 = nn.Linear(16, 3)

    def forward(self, x):
        h = self.body(x)
        return self.head1(h), self.head2(h)


torch.manual_seed(0)
model = MultiHead()
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
input = torch.randn(16, 10)
labels = torch.randint(0, 3, (16,))

for it in range(4):
    optimizer.zero_grad()
    o1, o2 = model(input)

    l1 = loss_fn(o1, labels)
    l1.backward(retain_graph=True)
    l2 = loss_fn(o2, labels)
    l2.backward()

    optimizer.step()
    print(it, l1.item(), l2.item())

for it in range(2):
    optimizer.zero_grad()
    o1, o2 = model(input)
    l1 = loss_fn(o1, labels)
    l2 = loss_fn(o2, labels)
    torch.autograd.backward([l1, l2])
    optimizer.step()
