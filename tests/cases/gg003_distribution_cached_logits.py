# plain-torch: raises "backward through the graph a second time"
"""GG003: two losses from one Bernoulli policy, each with its own backward: the distribution
computes its logits once (inside the first log_prob) and keeps them, so both graphs share them.
The shared tensor is a value the distribution computed and keeps for itself: it is named by the
distribution as the code holds it (`m`), not by the loss assigned on that line, nor by an attribute
the code never wrote (`m.logits`)."""
import torch
import torch.nn as nn
from torch.distributions import Bernoulli


def setup():
    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    return net, torch.optim.SGD(net.parameters(), lr=0.01)


def buggy():
    net, opt = setup()
    for step in range(2):
        probs = torch.sigmoid(net(torch.randn(8, 4)))
        m = Bernoulli(probs)
        action = m.sample()
        reward = torch.randn(8, 1)
        policy_loss = -(m.log_prob(action) * reward).mean()
        bonus_loss = -0.1 * m.log_prob(1 - action).mean()
        opt.zero_grad()
        policy_loss.backward()
        bonus_loss.backward()  # expect: GG003 m
        opt.step()


def clean():
    net, opt = setup()
    for step in range(3):
        probs = torch.sigmoid(net(torch.randn(8, 4)))
        m = Bernoulli(probs)
        action = m.sample()
        reward = torch.randn(8, 1)
        policy_loss = -(m.log_prob(action) * reward).mean()
        bonus_loss = -0.1 * m.log_prob(1 - action).mean()
        opt.zero_grad()
        (policy_loss + bonus_loss).backward()
        opt.step()
