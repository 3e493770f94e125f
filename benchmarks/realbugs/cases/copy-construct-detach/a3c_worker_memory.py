import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ActorCriticNet(nn.Module):
    def __init__(self, state_size=4, action_size=2):
        super().__init__()
        self.fc = nn.Linear(state_size, 32)
        self.actor = nn.Linear(32, action_size)
        self.critic = nn.Linear(32, 1)

    def forward(self, state):
        x = F.relu(self.fc(state))
        return F.softmax(self.actor(x), dim=-1), self.critic(x)


class Worker:
    def __init__(self, global_net, optimizer, gamma=0.9):
        self.local_net = global_net
        self.optimizer = optimizer
        self.gamma = gamma
        self.memory = []

    def step(self, state):
        probs, value = self.local_net(state)
        m = torch.distributions.Categorical(probs)
        action = m.sample()
        reward = float(action.item() == int(state[0] > 0))
        self.memory.append((state, m.log_prob(action), reward, value))

    def learn(self):
        R, returns = 0.0, []
        for t in reversed(self.memory):
            R = t[2] + self.gamma * R
            returns.insert(0, R)
        returns = torch.tensor(returns, dtype=torch.float)
        log_probs = torch.tensor([t[1] for t in self.memory], dtype=torch.float)
        values = torch.cat([t[3] for t in self.memory])
        advantages = returns - values
        actor_loss = -(log_probs * advantages.detach()).mean()
        critic_loss = advantages.pow(2).mean()
        loss = actor_loss + critic_loss
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.memory = []
        return loss.item()


global_net = ActorCriticNet()
optimizer = torch.optim.Adam(global_net.parameters(), lr=1e-3)
worker = Worker(global_net, optimizer)
for episode in range(3):
    for t in range(8):
        worker.step(torch.randn(4))
    print(episode, worker.learn())
