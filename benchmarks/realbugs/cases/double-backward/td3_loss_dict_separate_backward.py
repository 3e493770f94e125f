import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

obs_dim, act_dim = 6, 2


class TD3Loss(nn.Module):
    def __init__(self, actor_network, qvalue_network, num_qvalue_nets=2, gamma=0.99):
        super().__init__()
        self.actor_network = actor_network
        self.qvalue_network = nn.ModuleList([qvalue_network] + [
            nn.Sequential(nn.Linear(obs_dim + act_dim, 32), nn.ReLU(), nn.Linear(32, 1))
            for _ in range(num_qvalue_nets - 1)])
        self.gamma = gamma

    def forward(self, tensordict):
        obs, action = tensordict["observation"], tensordict["action"]
        actor_action = self.actor_network(obs)
        obs_cat = torch.cat([obs, obs], dim=0)
        action_cat = torch.cat([actor_action, action], dim=0)
        state_action_value = torch.stack([q(torch.cat([obs_cat, action_cat], dim=-1)).squeeze(-1)
                                          for q in self.qvalue_network])
        state_action_value_actor, current_qvalue = state_action_value.split(obs.shape[0], dim=1)
        loss_actor = -state_action_value_actor[0].mean()
        with torch.no_grad():
            next_action = self.actor_network(tensordict["next_observation"])
            next_q = torch.stack([q(torch.cat([tensordict["next_observation"], next_action], dim=-1)).squeeze(-1)
                                  for q in self.qvalue_network]).min(0).values
            target_value = tensordict["reward"] + self.gamma * next_q
        loss_qvalue = F.mse_loss(current_qvalue, target_value.expand_as(current_qvalue))
        return {"loss_actor": loss_actor, "loss_qvalue": loss_qvalue}


actor = nn.Sequential(nn.Linear(obs_dim, act_dim), nn.Tanh())
qvalue = nn.Sequential(nn.Linear(obs_dim + act_dim, 32), nn.ReLU(), nn.Linear(32, 1))
loss_module = TD3Loss(actor, qvalue)
optimizer_actor = torch.optim.Adam(loss_module.actor_network.parameters(), lr=1e-3)
optimizer_value = torch.optim.Adam(loss_module.qvalue_network.parameters(), lr=1e-3)

replay_buffer = [{"observation": torch.randn(16, obs_dim), "action": torch.rand(16, act_dim) * 2 - 1,
                  "reward": torch.randn(16), "next_observation": torch.randn(16, obs_dim)} for _ in range(3)]
for i, data in enumerate(replay_buffer):
    loss = loss_module(data)
    loss["loss_actor"].backward()
    optimizer_actor.step()
    optimizer_actor.zero_grad()
    loss["loss_qvalue"].backward()
    optimizer_value.step()
    optimizer_value.zero_grad()
