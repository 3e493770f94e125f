import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


class MetaOptimizer(nn.Module):
    def __init__(self, num_layers, hidden_size):
        super(MetaOptimizer, self).__init__()
        self.hidden_size = hidden_size
        self.linear1 = nn.Linear(3, hidden_size)
        self.lstms = []
        for i in range(num_layers):
            self.lstms.append(nn.LSTMCell(hidden_size, hidden_size))
        self.linear2 = nn.Linear(hidden_size, 1)
        self.linear2.weight.data.mul_(0.1)
        self.linear2.bias.data.fill_(0.0)

    def reset_lstm(self, n):
        self.hx = [torch.zeros(n, self.hidden_size) for _ in range(len(self.lstms))]
        self.cx = [torch.zeros(n, self.hidden_size) for _ in range(len(self.lstms))]

    def forward(self, x):
        x = torch.tanh(self.linear1(x))
        for i in range(len(self.lstms)):
            self.hx[i], self.cx[i] = self.lstms[i](x, (self.hx[i], self.cx[i]))
            x = self.hx[i]
        x = self.linear2(x)
        return x.squeeze(1)

    def meta_update(self, flat_params, loss_fn):
        loss = loss_fn(flat_params)
        grads = torch.autograd.grad(loss, flat_params, retain_graph=True)[0].detach()
        inputs = torch.stack([grads, grads.sign(), grads.abs().add(1e-8).log() / 10.0], dim=1)
        return flat_params + self.forward(inputs)


W = torch.randn(8, 5)
y = torch.randn(8)


def loss_fn(theta):
    return ((W @ theta - y) ** 2).mean()


meta_optimizer = MetaOptimizer(num_layers=2, hidden_size=10)
optimizer = optim.Adam(meta_optimizer.parameters(), lr=1e-3)

for epoch in range(4):
    theta = torch.zeros(5, requires_grad=True)
    meta_optimizer.reset_lstm(5)
    loss_sum = 0
    for k in range(5):
        theta = meta_optimizer.meta_update(theta, loss_fn)
        loss_sum = loss_sum + loss_fn(theta)
    optimizer.zero_grad()
    loss_sum.backward()
    optimizer.step()
    print(epoch, loss_sum.item())
