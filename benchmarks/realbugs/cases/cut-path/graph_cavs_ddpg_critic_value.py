import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)


class OUActor(nn.Module):
    def __init__(self, obs_dim, action_dim):
        super().__init__()
        self.policy = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, action_dim), nn.Tanh())

    def forward(self, observation):
        return self.policy(observation)


class OUCritic(nn.Module):
    def __init__(self, obs_dim, action_dim):
        super().__init__()
        self.value = nn.Sequential(nn.Linear(obs_dim + action_dim, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, observation, action):
        return self.value(torch.cat([observation, action], dim=-1))


class DDPG(object):
    def __init__(self, actor_model, actor_optimizer, critic_model, critic_optimizer, gamma=0.9,
                 batch_size=8, soft_update_tau=0.1):
        self.actor_model = actor_model
        self.actor_optimizer = actor_optimizer
        self.critic_model = critic_model
        self.critic_optimizer = critic_optimizer
        self.gamma = gamma
        self.batch_size = batch_size
        self.soft_update_tau = soft_update_tau
        self.actor_model_target = copy.deepcopy(actor_model)
        self.critic_model_target = copy.deepcopy(critic_model)
        self.loss_record = []

    def loss_process(self, loss, weight):
        weight = torch.as_tensor(weight, dtype=torch.float32)
        loss = torch.mean(loss * weight.detach())
        return loss

    def learn_onestep(self, info_batch, data_batch):
        actor_loss = []
        critic_loss = []

        for elem in data_batch:
            state, action, reward, next_state, done = elem
            action = torch.as_tensor(action, dtype=torch.float32)

            action_target = self.actor_model_target(next_state)
            critic_value_next = self.critic_model_target(next_state, action_target)
            critic_value = self.critic_model(state, action)
            critic_value = critic_value.detach()
            critic_target = reward + self.gamma * critic_value_next * (1 - done)

            critic_loss_sample = F.smooth_l1_loss(critic_value, critic_target)
            critic_loss.append(critic_loss_sample)

        critic_loss_e = torch.stack(critic_loss)
        critic_loss_total = self.loss_process(critic_loss_e, info_batch['weights'])
        self.critic_optimizer.zero_grad()
        critic_loss_total.backward(retain_graph=True)
        self.critic_optimizer.step()

        for elem in data_batch:
            state, action, reward, next_state, done = elem

            mu = self.actor_model(state)
            actor_loss_sample = -1 * self.critic_model(state, mu)
            actor_loss_s = actor_loss_sample.mean()
            actor_loss.append(actor_loss_s)

        actor_loss_e = torch.stack(actor_loss)
        actor_loss_total = self.loss_process(actor_loss_e, info_batch['weights'])
        self.actor_optimizer.zero_grad()
        actor_loss_total.backward(retain_graph=True)
        self.actor_optimizer.step()

        self.loss_record.append(float((critic_loss_total + actor_loss_total).detach().cpu().numpy()))

    def synchronize_target(self):
        for target_param, source_param in zip(self.critic_model_target.parameters(),
                                              self.critic_model.parameters()):
            target_param.data.copy_((1 - self.soft_update_tau) *
                                    target_param.data + self.soft_update_tau * source_param.data)

        for target_param, source_param in zip(self.actor_model_target.parameters(),
                                              self.actor_model.parameters()):
            target_param.data.copy_((1 - self.soft_update_tau) *
                                    target_param.data + self.soft_update_tau * source_param.data)


obs_dim, action_dim = 6, 2
actor = OUActor(obs_dim, action_dim)
critic = OUCritic(obs_dim, action_dim)
actor_optimizer = torch.optim.Adam(actor.parameters(), lr=1e-3)
critic_optimizer = torch.optim.Adam(critic.parameters(), lr=1e-3)
agent = DDPG(actor, actor_optimizer, critic, critic_optimizer)

for episode in range(4):
    data_batch = []
    for _ in range(agent.batch_size):
        state = torch.randn(1, obs_dim)
        action = np.random.uniform(-1, 1, size=(1, action_dim))
        reward = float(np.random.randn())
        next_state = torch.randn(1, obs_dim)
        done = 0.0
        data_batch.append((state, action, reward, next_state, done))
    info_batch = {'weights': np.ones(agent.batch_size)}
    agent.learn_onestep(info_batch, data_batch)
    agent.synchronize_target()
    print(episode, agent.loss_record[-1])
