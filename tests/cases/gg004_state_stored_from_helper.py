# plain-torch: raises "backward through the graph a second time"
"""GG004: a nested layer's helper returns the new state as a local; forward stores it on `self`."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LeakyMemory(nn.Module):
    def __init__(self, width, detach_state=False):
        super().__init__()
        self.decay = nn.Parameter(torch.full((width,), 0.5))
        self.memory = None
        self.detach_state = detach_state

    def _update(self, x, memory):
        if memory is None:
            memory = torch.zeros(x.shape[1:])
        for t in range(x.shape[0]):
            memory = torch.sigmoid(self.decay) * memory + x[t]
        return memory

    def forward(self, x):
        memory = self._update(x, self.memory)
        self.memory = memory.detach() if self.detach_state else memory
        return x + memory


def train(detach_state):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), LeakyMemory(6, detach_state), nn.Linear(6, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(3):
        x, y = torch.randn(5, 4), torch.randn(5, 1)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()  # expect: GG004 self.memory
        opt.step()


def buggy():
    train(detach_state=False)


def clean():
    train(detach_state=True)
