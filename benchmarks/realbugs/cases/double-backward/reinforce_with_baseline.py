import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

torch.manual_seed(0)

gamma = 0.99


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 16)
        self.affine2 = nn.Linear(16, 2)
        self.log_act_probs = []
        self.rewards = []

    def forward(self, x):
        return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=1)


class StateValue(nn.Module):
    def __init__(self):
        super(StateValue, self).__init__()
        self.fc = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.fc(x)


policy = Policy()
s_value_func = StateValue()
alpha_theta = 1e-3
alpha_w = 1e-3
optimizer_theta = optim.Adam(policy.parameters(), lr=alpha_theta)
optimizer_w = optim.Adam(s_value_func.parameters(), lr=alpha_w)


def select_action(state):
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.log_act_probs.append(m.log_prob(action))
    return action.item()


for i_episode in range(2):
    states = [torch.randn(1, 4) for _ in range(5)]
    for state in states:
        select_action(state)
        policy.rewards.append(1.0)

    R = 0
    returns = []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)

    for t, (state, G) in enumerate(zip(states, returns)):
        delta = G - s_value_func(state)

        optimizer_w.zero_grad()
        policy_loss_w = (delta ** 2).mean()
        policy_loss_w.backward()
        optimizer_w.step()

        optimizer_theta.zero_grad()
        policy_loss_theta = -(policy.log_act_probs[t] * delta).mean()
        policy_loss_theta.backward()
        optimizer_theta.step()

    del policy.log_act_probs[:]
    del policy.rewards[:]
