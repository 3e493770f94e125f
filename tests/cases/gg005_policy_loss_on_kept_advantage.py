# plain-torch: raises "modified by an inplace operation"
"""GG005, not GG004: advantages computed from the critic's values before the critic's backward
(retain_graph=True) and step, and the policy loss built from them after that step. The advantage
was not kept for a next training step: the actor's optimizer has not stepped, so this is the same
step's second loss, and what breaks it is the critic's step (GG005)."""
import torch
import torch.nn as nn


def setup():
    torch.manual_seed(0)
    actor = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2), nn.Tanh())
    critic = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
    return actor, critic, torch.optim.Adam(actor.parameters(), 1e-3), torch.optim.Adam(critic.parameters(), 1e-3)


def buggy():
    actor, critic, opt_a, opt_c = setup()
    s, r = torch.randn(9, 4), torch.randn(8)
    values = critic(torch.cat([s, actor(s)], dim=1)).squeeze(1)
    advantages = r + 0.9 * values[1:] - values[:-1]
    value_loss = ((values[:-1] - (r + 0.9 * values[1:]).detach()) ** 2).mean()
    opt_c.zero_grad()
    value_loss.backward(retain_graph=True)
    opt_c.step()  # expect: GG005 values
    policy_loss = -advantages.mean()
    opt_a.zero_grad()
    policy_loss.backward()
    opt_a.step()


def clean():
    actor, critic, opt_a, opt_c = setup()
    for _ in range(3):
        s, r = torch.randn(9, 4), torch.randn(8)
        values = critic(torch.cat([s, actor(s)], dim=1)).squeeze(1)
        advantages = r + 0.9 * values[1:] - values[:-1]
        value_loss = ((values[:-1] - (r + 0.9 * values[1:]).detach()) ** 2).mean()
        policy_loss = -advantages.mean()
        opt_c.zero_grad()
        opt_a.zero_grad()
        value_loss.backward(retain_graph=True)
        policy_loss.backward()  # both backwards before either step
        opt_c.step()
        opt_a.step()
