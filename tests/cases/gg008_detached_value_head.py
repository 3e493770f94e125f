# plain-torch: runs
"""GG008: an actor-critic update detaches the critic's own prediction before the value loss, so the
critic (one nn.Sequential inside a module) never gets a gradient while the actor trains. The
finding names the critic as the program holds it (`self.critic`), not its inner Sequential."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Critic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, s):
        return self.body(s)


class Agent:
    def __init__(self, detach_value: bool) -> None:
        self.actor = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
        self.critic = Critic()
        self.opt = torch.optim.Adam(list(self.actor.parameters()) + list(self.critic.parameters()), lr=1e-3)
        self.detach_value = detach_value

    def update(self, s, a, returns):
        logp = F.log_softmax(self.actor(s), -1).gather(1, a[:, None]).squeeze(1)
        value = self.critic(s).squeeze(1)
        if self.detach_value:
            value = value.detach()
        advantage = (returns - value).detach()
        loss = -(logp * advantage).mean() + F.mse_loss(value, returns)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()  # expect: GG008 self.critic


def rollouts(n=3):
    g = torch.Generator().manual_seed(9)
    for _ in range(n):
        yield torch.randn(8, 4, generator=g), torch.randint(0, 2, (8,), generator=g), torch.randn(8, generator=g)


def buggy():
    torch.manual_seed(0)
    agent = Agent(detach_value=True)
    for s, a, r in rollouts():
        agent.update(s, a, r)
    assert agent.critic.body[0].weight.grad is None and agent.actor[0].weight.grad is not None


def clean():
    torch.manual_seed(0)
    agent = Agent(detach_value=False)
    for s, a, r in rollouts():
        agent.update(s, a, r)
