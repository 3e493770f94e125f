import torch
import torch.nn as nn
from torch.optim import Adam

torch.manual_seed(0)


def to_tensor(ndarray, volatile=False, requires_grad=False, dtype=torch.float32):
    return torch.as_tensor(ndarray, dtype=dtype).requires_grad_(requires_grad)


def soft_update(target, source, tau):
    for target_param, param in zip(target.parameters(), source.parameters()):
        target_param.data.copy_(target_param.data * (1.0 - tau) + param.data * tau)


def hard_update(target, source):
    for target_param, param in zip(target.parameters(), source.parameters()):
        target_param.data.copy_(param.data)


class Actor(nn.Module):
    def __init__(self, nb_states, nb_actions, hidden=16):
        super(Actor, self).__init__()
        self.fc1 = nn.Linear(nb_states, hidden)
        self.fc2 = nn.Linear(hidden, nb_actions)

    def forward(self, x):
        return torch.tanh(self.fc2(torch.relu(self.fc1(x))))


class Critic(nn.Module):
    def __init__(self, nb_states, nb_actions, hidden=16):
        super(Critic, self).__init__()
        self.fc1 = nn.Linear(nb_states + nb_actions, hidden)
        self.fc2 = nn.Linear(hidden, 1)

    def forward(self, xs):
        x, a = xs
        return self.fc2(torch.relu(self.fc1(torch.cat([x, a], 1))))


class DDPG(object):
    def __init__(self, nb_states, nb_actions):
        self.nb_states = nb_states
        self.nb_actions = nb_actions
        self.actor = Actor(nb_states, nb_actions)
        self.actor_target = Actor(nb_states, nb_actions)
        self.actor_optim = Adam(self.actor.parameters(), lr=1e-3)
        self.critic = Critic(nb_states, nb_actions)
        self.critic_target = Critic(nb_states, nb_actions)
        self.critic_optim = Adam(self.critic.parameters(), lr=1e-3)
        hard_update(self.actor_target, self.actor)
        hard_update(self.critic_target, self.critic)
        self.batch_size = 8
        self.tau = 0.001
        self.discount = 0.99
        self.criterion = nn.MSELoss()

    def sample_and_split(self, batch_size):
        state_batch = torch.randn(batch_size, self.nb_states)
        action_batch = torch.rand(batch_size, self.nb_actions) * 2 - 1
        reward_batch = torch.randn(batch_size, 1)
        next_state_batch = torch.randn(batch_size, self.nb_states)
        terminal_batch = (torch.rand(batch_size, 1) > 0.1).float()
        return state_batch, action_batch, reward_batch, next_state_batch, terminal_batch

    def update_policy(self):
        state_batch, action_batch, reward_batch, next_state_batch, terminal_batch = self.sample_and_split(self.batch_size)

        next_q_values = self.critic_target([
            to_tensor(next_state_batch, volatile=True),
            self.actor_target(to_tensor(next_state_batch, volatile=True)),
        ])

        target_q_batch = to_tensor(reward_batch) + self.discount * to_tensor(terminal_batch) * next_q_values

        self.critic.zero_grad()
        q_batch = self.critic([to_tensor(state_batch), to_tensor(action_batch)])
        value_loss = self.criterion(q_batch, target_q_batch)
        value_loss.backward()
        self.critic_optim.step()

        self.actor.zero_grad()
        policy_loss = -self.critic([to_tensor(state_batch), self.actor(to_tensor(state_batch))])
        policy_loss = policy_loss.mean()
        policy_loss.backward()
        self.actor_optim.step()

        soft_update(self.actor_target, self.actor, self.tau)
        soft_update(self.critic_target, self.critic, self.tau)


agent = DDPG(3, 1)
for _ in range(5):
    agent.update_policy()
