import torch
import torch.nn as nn
from torch.distributions import Categorical

torch.manual_seed(0)


class ActorCritic(nn.Module):
    def __init__(self, obs_dim=6, n_actions=3):
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(obs_dim, 16), nn.Tanh(), nn.Linear(16, n_actions))
        self.critic = nn.Sequential(nn.Linear(obs_dim, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, obs):
        return Categorical(logits=self.actor(obs)), self.critic(obs).squeeze(-1)


class PPO2:
    def __init__(self, policy, lr=3e-4, clip=0.2, ppo_epochs=3):
        self.policy = policy
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
        self.clip = clip
        self.ppo_epochs = ppo_epochs

    def collect(self, n_steps=32):
        replay = {'obs': [], 'actions': [], 'log_probs': [], 'values': [], 'rewards': []}
        with torch.no_grad():
            for t in range(n_steps):
                obs = torch.randn(6)
                dist, value = self.policy(obs)
                action = dist.sample()
                replay['obs'].append(obs)
                replay['actions'].append(action)
                replay['log_probs'].append(dist.log_prob(action))
                replay['values'].append(value)
                replay['rewards'].append(torch.tensor(float(action.item() == 1)))
        return {k: torch.stack(v) for k, v in replay.items()}

    def update(self, replay):
        returns = replay['rewards']
        advantages = returns - replay['values']
        old_log_probs = replay['log_probs'].clone()
        for epoch in range(self.ppo_epochs):
            new_log_probs = replay['log_probs']
            ratio = torch.exp(new_log_probs - old_log_probs)
            surr1 = ratio * advantages
            surr2 = torch.clamp(ratio, 1.0 - self.clip, 1.0 + self.clip) * advantages
            policy_loss = -torch.min(surr1, surr2).mean()
            value_loss = (returns - replay['values']).pow(2).mean()
            loss = policy_loss + 0.5 * value_loss
            loss.requires_grad = True
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        return loss.item()


policy = ActorCritic()
agent = PPO2(policy)
for iteration in range(3):
    replay = agent.collect()
    print(iteration, agent.update(replay))
