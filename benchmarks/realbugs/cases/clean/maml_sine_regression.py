import math
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F


class SineNet(nn.Module):
    def __init__(self):
        super(SineNet, self).__init__()
        self.fc1 = nn.Linear(1, 16)
        self.fc2 = nn.Linear(16, 16)
        self.fc3 = nn.Linear(16, 1)

    def forward(self, x, weights=None):
        if weights is None:
            weights = OrderedDict(self.named_parameters())
        x = F.relu(F.linear(x, weights['fc1.weight'], weights['fc1.bias']))
        x = F.relu(F.linear(x, weights['fc2.weight'], weights['fc2.bias']))
        return F.linear(x, weights['fc3.weight'], weights['fc3.bias'])


def sample_task(g):
    amplitude = torch.empty(1).uniform_(0.1, 5.0, generator=g)
    phase = torch.empty(1).uniform_(0, math.pi, generator=g)

    def draw(k):
        x = torch.empty(k, 1).uniform_(-5.0, 5.0, generator=g)
        return x, amplitude * torch.sin(x + phase)
    return draw


class InnerLoop(SineNet):
    """
    This module performs the inner loop of MAML
    The forward method updates weights with gradient steps on training data,
    then computes and returns a meta-gradient w.r.t. validation data
    """

    def __init__(self, num_updates, step_size):
        super(InnerLoop, self).__init__()
        self.num_updates = num_updates
        self.step_size = step_size
        self.loss_fn = nn.MSELoss()

    def net_forward(self, x, weights=None):
        return super(InnerLoop, self).forward(x, weights)

    def forward_pass(self, in_, target, weights=None):
        out = self.net_forward(in_, weights)
        loss = self.loss_fn(out, target)
        return loss, out

    def forward(self, task):
        train_x, train_y = task(5)
        val_x, val_y = task(5)
        fast_weights = OrderedDict((name, param) for (name, param) in self.named_parameters())
        for i in range(self.num_updates):
            if i == 0:
                loss, _ = self.forward_pass(train_x, train_y)
                grads = torch.autograd.grad(loss, self.parameters(), create_graph=True)
            else:
                loss, _ = self.forward_pass(train_x, train_y, fast_weights)
                grads = torch.autograd.grad(loss, fast_weights.values(), create_graph=True)
            fast_weights = OrderedDict((name, param - self.step_size * grad)
                                       for ((name, param), grad) in zip(fast_weights.items(), grads))
        loss, _ = self.forward_pass(val_x, val_y, fast_weights)
        return loss


torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
meta_batch_size = 4
meta_lr = 1e-3
learner = InnerLoop(num_updates=2, step_size=0.01)
opt = torch.optim.Adam(learner.parameters(), lr=meta_lr)

for it in range(5):
    opt.zero_grad()
    meta_loss = 0.0
    for _ in range(meta_batch_size):
        task = sample_task(g)
        meta_loss = meta_loss + learner(task)
    meta_loss = meta_loss / meta_batch_size
    meta_loss.backward()
    opt.step()
    print('meta iteration', it, 'meta loss', meta_loss.item())
