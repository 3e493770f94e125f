# plain-torch: raises "backward through the graph a second time"
"""GG003: a policy-gradient loss and an entropy bonus from one Categorical, each with its own
backward. The distribution normalizes its logits once, in its constructor, and keeps them: both
losses run through that graph. The shared tensor is a value the library computed and keeps for
itself, so the finding names the distribution as the code holds it (`dist`), not its attribute."""
import torch
import torch.nn as nn
from torch.distributions import Categorical


def setup():
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
    return policy, torch.optim.Adam(policy.parameters(), lr=1e-3)


def buggy():
    policy, opt = setup()
    for _ in range(2):
        obs = torch.randn(5, 4)
        dist = Categorical(logits=policy(obs))
        actions = dist.sample()
        advantages = torch.randn(5)
        pg_loss = -(dist.log_prob(actions) * advantages).mean()
        entropy_bonus = -0.01 * dist.entropy().mean()
        opt.zero_grad()
        pg_loss.backward()
        entropy_bonus.backward()  # expect: GG003 dist
        opt.step()


def clean():
    policy, opt = setup()
    for i in range(3):
        obs = torch.randn(5, 4)
        dist = Categorical(logits=policy(obs))
        actions = dist.sample()
        advantages = torch.randn(5)
        pg_loss = -(dist.log_prob(actions) * advantages).mean()
        entropy_bonus = -0.01 * dist.entropy().mean()
        opt.zero_grad()
        if i % 2:
            (pg_loss + entropy_bonus).backward()
        else:
            pg_loss.backward(retain_graph=True)
            entropy_bonus.backward()
        opt.step()
