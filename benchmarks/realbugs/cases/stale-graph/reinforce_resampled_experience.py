import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

torch.manual_seed(0)
random.seed(0)

gamma = 0.99


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 2)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        action_scores = self.affine1(x)
        return F.softmax(action_scores, dim=1)


policy = Policy()
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)


def select_action(state):
    probs = policy(state.unsqueeze(0))
    m = Categorical(probs)
    action = m.sample()
    policy.saved_actions.append(m.log_prob(action))
    return action.item()


def finish_episode(batch_size=6):
    R = 0
    returns = []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + 1e-6)
    experiences = random.sample(list(zip(policy.saved_actions, returns)), batch_size)
    policy_loss = torch.cat([-log_prob * R for log_prob, R in experiences]).sum()
    optimizer.zero_grad()
    policy_loss.backward()
    optimizer.step()


for i_episode in range(3):
    state = torch.randn(4)
    for t in range(10):
        action = select_action(state)
        state = torch.randn(4)
        policy.rewards.append(float(action == 1))
    for _ in range(2):
        finish_episode()
    del policy.rewards[:]
    del policy.saved_actions[:]
