import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class QNet(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, act_dim))

    def forward(self, obs):
        return self.net(obs)


class DQNModule:
    def __init__(self, obs_dim, act_dim, lr):
        self.models = {"q_net": QNet(obs_dim, act_dim), "target_q_net": QNet(obs_dim, act_dim)}
        self.models["target_q_net"].load_state_dict(self.models["q_net"].state_dict())
        self.optimizers = {"q_net": torch.optim.Adam(self.models["q_net"].parameters(), lr=lr)}


class DQNAlgorithm:
    def __init__(self, algo_module, gamma=0.99):
        self.algo_module = algo_module
        self.gamma = gamma

    def prepare_loss(self, obs_batch, next_obs_batch, rewards_batch, actions_batch):
        q_values = self.algo_module.models["q_net"](obs_batch).gather(1, actions_batch)
        max_next_q_values = self.algo_module.models["target_q_net"](next_obs_batch).max(1)[0].view(-1, 1)
        q_targets = rewards_batch + self.gamma * max_next_q_values
        q_loss = torch.mean(F.mse_loss(q_values, q_targets))
        return q_loss

    def train(self, batch):
        loss = self.prepare_loss(*batch)
        optimizer = self.algo_module.optimizers["q_net"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()


algo = DQNAlgorithm(DQNModule(4, 3, 1e-3))
for _ in range(5):
    batch = (torch.randn(16, 4), torch.randn(16, 4), torch.randn(16, 1), torch.randint(0, 3, (16, 1)))
    algo.train(batch)
