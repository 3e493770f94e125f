import random
from collections import namedtuple

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

Transition = namedtuple('Transition', ('state', 'action', 'next_state', 'reward', 'done'))


class ReplayMemory(object):
    def __init__(self, capacity):
        self.capacity = capacity
        self.memory = []
        self.position = 0

    def push(self, *args):
        if len(self.memory) < self.capacity:
            self.memory.append(None)
        self.memory[self.position] = Transition(*args)
        self.position = (self.position + 1) % self.capacity

    def sample(self, batch_size):
        return random.sample(self.memory, batch_size)

    def __len__(self):
        return len(self.memory)


class DQN(nn.Module):
    def __init__(self, n_action):
        super(DQN, self).__init__()
        self.conv1 = nn.Conv2d(2, 8, kernel_size=3, stride=1)
        self.conv2 = nn.Conv2d(8, 8, kernel_size=3, stride=1)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, n_action)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.relu(self.fc1(x.view(x.size(0), -1)))
        return self.fc2(x)


class GridEnv:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)
        self.t = 0

    def reset(self):
        self.t = 0
        return torch.rand(2, 8, 8, generator=self.g)

    def step(self, action):
        self.t += 1
        obs = torch.rand(2, 8, 8, generator=self.g)
        reward = float(obs[action % 2].mean() > 0.5)
        return obs, reward, self.t >= 6


random.seed(0)
torch.manual_seed(0)
BATCH_SIZE = 4
TARGET_UPDATE = 4
n_action = 4
env = GridEnv(0)
policy_net = DQN(n_action)
target_net = DQN(n_action)
target_net.load_state_dict(policy_net.state_dict())
target_net.eval()
optimizer = optim.RMSprop(policy_net.parameters(), lr=0.00025, alpha=0.95, eps=0.01)
memory = ReplayMemory(200)


def optimize_model(memory, batch_size, gamma=0.999):
    if len(memory) < batch_size:
        return
    transitions = memory.sample(batch_size)
    batch = Transition(*zip(*transitions))
    next_state_batch = torch.stack(batch.next_state)
    state_batch = torch.stack(batch.state)
    action_batch = torch.stack(batch.action)
    reward_batch = torch.stack(batch.reward)
    done_batch = torch.stack(batch.done)

    state_action_values = policy_net(state_batch).gather(1, action_batch)
    next_state_values = target_net(next_state_batch).max(1)[0].detach()
    expected_state_action_values = (next_state_values * gamma) * (1.0 - done_batch) + reward_batch

    loss = F.smooth_l1_loss(state_action_values, expected_state_action_values.unsqueeze(1))
    optimizer.zero_grad()
    loss.backward()
    for param in policy_net.parameters():
        param.grad.data.clamp_(-1, 1)
    optimizer.step()
    return loss.item()


steps_done = 0
for n_episode in range(2):
    state = env.reset()
    done = False
    while not done:
        if random.random() < 0.3:
            action = torch.tensor([random.randrange(n_action)], dtype=torch.long)
        else:
            with torch.no_grad():
                action = policy_net(state.unsqueeze(0)).max(1)[1]
        next_state, reward, done = env.step(action.item())
        memory.push(state, action, next_state, torch.tensor(reward), torch.tensor(float(done)))
        state = next_state
        loss = optimize_model(memory, BATCH_SIZE)
        steps_done += 1
        if steps_done % TARGET_UPDATE == 0:
            target_net.load_state_dict(policy_net.state_dict())
    print(n_episode, loss)
