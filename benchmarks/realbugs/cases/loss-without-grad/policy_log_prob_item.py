import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

torch.manual_seed(0)


class EvolvingModel(nn.Module):
    def __init__(self, n_actions=4):
        super().__init__()
        self.backbone = nn.Linear(8, 8)
        self.policy = nn.Linear(2, n_actions)

    def forward(self, x):
        return self.backbone(x)

    def evolve_with_policy(self, loss_value, epsilon):
        state = torch.tensor([[loss_value, epsilon]])
        dist = Categorical(logits=self.policy(state))
        action = dist.sample()
        log_prob = dist.log_prob(action)
        total_reward = -loss_value * (1.0 + 0.1 * action.item())
        return {'total_reward': total_reward, 'log_prob': log_prob.item()}


class Trainer:
    def __init__(self, model, policy_freq=2):
        self.model = model
        self.device = torch.device('cpu')
        self.optimizer = torch.optim.Adam(model.backbone.parameters(), lr=1e-3)
        self.policy_optimizer = torch.optim.Adam(model.policy.parameters(), lr=1e-3)
        self.policy_freq = policy_freq
        self.global_step = 0

    def train_step(self, x, y, epsilon=0.1):
        self.optimizer.zero_grad()
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        self.global_step += 1

        if self.global_step % self.policy_freq == 0:
            with torch.no_grad():
                evo_stats = self.model.evolve_with_policy(loss.item(), epsilon)

            reward = torch.tensor(evo_stats['total_reward'], device=self.device)
            log_prob = torch.tensor(evo_stats['log_prob'], device=self.device)

            policy_loss = -(log_prob * reward)
            self.policy_optimizer.zero_grad()
            policy_loss.backward()
            self.policy_optimizer.step()
        return loss.item()


trainer = Trainer(EvolvingModel())
x, y = torch.randn(16, 8), torch.randn(16, 8)
for step in range(4):
    trainer.train_step(x, y)
