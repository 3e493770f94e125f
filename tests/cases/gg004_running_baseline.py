# plain-torch: raises "backward through the graph a second time"
"""GG004: a REINFORCE baseline updated as a running average of a tensor with history."""
import torch
import torch.nn as nn


def train(detach):
    torch.manual_seed(0)
    policy = nn.Linear(4, 3)
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    baseline = torch.zeros(())
    for episode in range(3):
        obs = torch.randn(5, 4)
        dist = torch.distributions.Categorical(logits=policy(obs))
        actions = dist.sample()
        rewards = torch.randn(5)
        value = dist.log_prob(actions).exp().mean()
        baseline = 0.9 * baseline + 0.1 * (value.detach() if detach else value)
        loss = -(dist.log_prob(actions) * (rewards - baseline)).mean()
        opt.zero_grad()
        loss.backward()  # expect: GG004 baseline
        opt.step()


def buggy():
    train(detach=False)


def clean():
    train(detach=True)
