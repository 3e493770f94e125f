# plain-torch: runs
"""GG010: each network keeps its own optimizer (`self.opt`), and the training helper reaches it
through a holder object (`agent.critic.opt`); nothing zeroes the critic's gradients, so every
step applies the sum of all earlier ones. The finding names the optimizer by that path."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Critic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
        self.opt = torch.optim.SGD(self.parameters(), lr=1e-2)

    def forward(self, s):
        return self.body(s)


class Agent:
    def __init__(self) -> None:
        self.critic = Critic()


def transitions(n=4):
    g = torch.Generator().manual_seed(2)
    for _ in range(n):
        yield torch.randn(6, 3, generator=g), torch.randn(6, 1, generator=g)


def update(agent, s, target, zero):
    if zero:
        agent.critic.opt.zero_grad()
    F.mse_loss(agent.critic(s), target).backward()
    agent.critic.opt.step()  # expect: GG010 agent.critic.opt


def buggy():
    torch.manual_seed(0)
    agent = Agent()
    for s, target in transitions():
        update(agent, s, target, zero=False)
    w = agent.critic.body[0].weight
    fresh = torch.autograd.grad(F.mse_loss(agent.critic(s), target), w)[0]
    assert (w.grad - fresh).norm() > 0.25 * fresh.norm()


def clean():
    torch.manual_seed(0)
    agent = Agent()
    for s, target in transitions():
        update(agent, s, target, zero=True)
