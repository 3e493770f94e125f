# plain-torch: raises "grad can be implicitly created only for scalar outputs"
"""GG012: REINFORCE loss built per step and never summed."""
import torch
import torch.nn as nn
from torch.distributions import Categorical


def episode(policy, steps=5):
    log_probs, rewards = [], []
    state = torch.zeros(4)
    for t in range(steps):
        dist = Categorical(logits=policy(state))
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        rewards.append(float(action.item() == t % 2))
        state = state + 0.1
    return torch.stack(log_probs), torch.tensor(rewards)


def discounted(rewards, gamma=0.9):
    out, running = [], 0.0
    for r in reversed(rewards.tolist()):
        running = r + gamma * running
        out.append(running)
    return torch.tensor(out[::-1])


def buggy():
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
    optimizer = torch.optim.RMSprop(policy.parameters(), lr=1e-2)
    for _ in range(2):
        log_probs, rewards = episode(policy)
        policy_loss = -log_probs * discounted(rewards)
        optimizer.zero_grad()
        policy_loss.backward()  # expect: GG012 policy_loss
        optimizer.step()


def clean():
    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
    optimizer = torch.optim.RMSprop(policy.parameters(), lr=1e-2)
    for _ in range(2):
        log_probs, rewards = episode(policy)
        policy_loss = (-log_probs * discounted(rewards)).sum()
        optimizer.zero_grad()
        policy_loss.backward()
        optimizer.step()
