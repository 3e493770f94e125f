# plain-torch: raises "modified by an inplace operation"
"""GG005: an actor-critic computes the policy loss through the critic, steps the critic, then
backpropagates the policy loss: the finding names the policy loss (its graph holds the critic's
old weights) and points its fix-at at the line that computed it."""
import torch
import torch.nn as nn


def q_value(critic, s, a):
    return critic(torch.cat([s, a], dim=1))


def setup():
    torch.manual_seed(0)
    actor = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2), nn.Tanh())
    critic = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
    return actor, critic, torch.optim.Adam(actor.parameters(), 1e-3), torch.optim.Adam(critic.parameters(), 1e-3)


def buggy():
    actor, critic, opt_a, opt_c = setup()
    s, a, r = torch.randn(32, 4), torch.rand(32, 2), torch.randn(32, 1)
    value_loss = ((q_value(critic, s, a) - r) ** 2).mean()
    policy_loss = -q_value(critic, s, actor(s)).mean()
    opt_c.zero_grad()
    value_loss.backward()
    opt_c.step()  # expect: GG005 policy_loss
    opt_a.zero_grad()
    policy_loss.backward()
    opt_a.step()


def clean():
    actor, critic, opt_a, opt_c = setup()
    for _ in range(3):
        s, a, r = torch.randn(32, 4), torch.rand(32, 2), torch.randn(32, 1)
        value_loss = ((q_value(critic, s, a) - r) ** 2).mean()
        opt_c.zero_grad()
        value_loss.backward()
        opt_c.step()
        policy_loss = -q_value(critic, s, actor(s)).mean()  # after the critic's step
        opt_a.zero_grad()
        policy_loss.backward()
        opt_a.step()
