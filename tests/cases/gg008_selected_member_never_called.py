# plain-torch: runs
"""GG008: one member of a ModuleList is never called while the forward picks among the others.

A forward that selects members per step (a head per task, LayerDrop) leaves a member without
gradient for a few steps by design: only a member still without any gradient after sixteen steps
is reported. A layer used at some steps and skipped at others, with `loss.item()` logged after
each step, is not "cut by .item()" at the steps that skip it.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.heads = nn.ModuleList([nn.Linear(8, 1) for _ in range(3)])

    def forward(self, x, task):
        return self.heads[task](torch.relu(self.body(x)))


def train(tasks):
    torch.manual_seed(0)
    model = Heads()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    for task in tasks:
        opt.zero_grad()
        loss = F.mse_loss(model(x, task), y)
        loss.backward()
        opt.step()  # expect: GG008 model.heads[2]
        print(f"{loss.item():.3f}")
    return model


def buggy():
    # the task list never names head 2: it never gets a gradient
    model = train([0, 1] * 20)
    assert model.heads[2].weight.grad is None


class LayerDrop(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
        self.aux = nn.Linear(8, 1)
        self.out = nn.Linear(8, 1)

    def forward(self, x, skip):
        for i, layer in enumerate(self.layers):
            if i not in skip:
                x = torch.tanh(layer(x))
        return x


def clean():
    # head 2 gets its first batch at step 6 (task sampling)
    train([0, 0, 1, 0, 1, 2, 0, 2, 1])
    # LayerDrop: layer 0 skipped at the first steps, others at later ones; an auxiliary head
    # added to the loss every other step; the loss logged with .item() after each step
    torch.manual_seed(0)
    model = LayerDrop()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(8, 8), torch.randn(8, 1)
    for step, skip in enumerate([{0}, {0, 2}, {0}, {1}, set(), {2}]):
        opt.zero_grad()
        h = model(x, skip)
        loss = F.mse_loss(model.out(h), y)
        if step % 2 == 0:
            loss = loss + 0.1 * F.mse_loss(model.aux(h), y)
        loss.backward()
        opt.step()
        print(f"{loss.item():.3f}")
