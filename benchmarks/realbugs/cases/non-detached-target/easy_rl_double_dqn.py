import random

import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)
random.seed(0)


class MLP(nn.Module):
    def __init__(self, n_states, n_actions, hidden_dim=32):
        super(MLP, self).__init__()
        self.fc1 = nn.Linear(n_states, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, n_actions)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ReplayBuffer:
    def __init__(self, capacity):
        self.capacity = capacity
        self.buffer = []

    def push(self, *transition):
        self.buffer.append(transition)
        self.buffer = self.buffer[-self.capacity:]

    def sample(self, batch_size):
        batch = random.sample(self.buffer, batch_size)
        return zip(*batch)


class DoubleDQN:
    def __init__(self, n_states, n_actions, cfg):
        self.gamma = cfg["gamma"]
        self.batch_size = cfg["batch_size"]
        self.policy_net = MLP(n_states, n_actions)
        self.target_net = self.policy_net
        self.optimizer = optim.Adam(self.policy_net.parameters(), lr=cfg["lr"])
        self.memory = ReplayBuffer(cfg["memory_capacity"])

    def update(self):
        state_batch, action_batch, reward_batch, next_state_batch, done_batch = self.memory.sample(self.batch_size)
        state_batch = torch.stack(state_batch)
        action_batch = torch.tensor(action_batch).unsqueeze(1)
        reward_batch = torch.tensor(reward_batch)
        next_state_batch = torch.stack(next_state_batch)
        done_batch = torch.tensor(done_batch, dtype=torch.float)
        q_values = self.policy_net(state_batch)
        next_q_values = self.policy_net(next_state_batch)
        q_value = q_values.gather(dim=1, index=action_batch).squeeze(1)
        next_target_values = self.target_net(next_state_batch)
        next_target_q_value = next_target_values.gather(1, torch.max(next_q_values, 1)[1].unsqueeze(1)).squeeze(1)
        expected_q_value = reward_batch + self.gamma * next_target_q_value * (1 - done_batch)
        loss = nn.MSELoss()(q_value, expected_q_value)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


cfg = {"gamma": 0.95, "batch_size": 8, "lr": 1e-3, "memory_capacity": 64}
agent = DoubleDQN(4, 2, cfg)
for i in range(32):
    agent.memory.push(torch.randn(4), random.randrange(2), random.random(), torch.randn(4), float(i % 10 == 9))
for _ in range(5):
    agent.update()
