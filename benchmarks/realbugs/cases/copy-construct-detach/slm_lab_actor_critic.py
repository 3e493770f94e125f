import torch
import torch.nn as nn
from torch.distributions import Categorical

torch.manual_seed(0)


class Body:
    def __init__(self):
        self.log_probs = []
        self.rewards = []
        self.states = []


class ActorCritic:
    def __init__(self, state_dim=4, action_dim=2, gamma=0.99):
        self.body = Body()
        self.net = nn.Sequential(nn.Linear(state_dim, 16), nn.ReLU(), nn.Linear(16, action_dim))
        self.critic = nn.Sequential(nn.Linear(state_dim, 16), nn.ReLU(), nn.Linear(16, 1))
        self.optim = torch.optim.Adam(list(self.net.parameters()) + list(self.critic.parameters()), lr=1e-3)
        self.gamma = gamma

    def act(self, state):
        pdparam = self.net(state)
        action_pd = Categorical(logits=pdparam)
        action = action_pd.sample()
        self.body.log_probs.append(action_pd.log_prob(action))
        self.body.states.append(state)
        return action.item()

    def calc_rets(self):
        rets, future = [], 0.0
        for r in reversed(self.body.rewards):
            future = r + self.gamma * future
            rets.insert(0, future)
        return torch.tensor(rets)

    def train(self):
        rets = self.calc_rets()
        states = torch.stack(self.body.states)
        v_preds = self.critic(states).squeeze(-1)
        advs = (rets - v_preds).detach()
        log_probs = torch.tensor(self.body.log_probs)
        policy_loss = -(log_probs * advs).mean()
        val_loss = (v_preds - rets).pow(2).mean()
        loss = policy_loss + val_loss
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()
        self.body = Body()
        return loss.item()


agent = ActorCritic()
for episode in range(3):
    for t in range(10):
        state = torch.randn(4)
        action = agent.act(state)
        agent.body.rewards.append(float(action == (state[0] > 0).item()))
    print(episode, agent.train())
