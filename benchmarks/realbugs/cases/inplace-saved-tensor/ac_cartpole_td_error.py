import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

np.random.seed(1)
torch.manual_seed(1)

MAX_EPISODE = 2
MAX_EP_STEPS = 3
GAMMA = 0.9
LR_A = 0.001
LR_C = 0.01
N_F = 4
N_A = 2


class Net(nn.Module):
    def __init__(self, n_feature, n_hidden, n_output, activate=False):
        super(Net, self).__init__()
        self.l1 = nn.Linear(n_feature, n_hidden)
        self.acts_prob = nn.Linear(n_hidden, n_output)
        self.activate = activate

    def forward(self, x):
        x = self.l1(x)
        x = F.relu(x)
        x = self.acts_prob(x)
        if self.activate:
            x = F.softmax(x, dim=1)
        return x


class Actor(object):
    def __init__(self, n_features, n_actions, n_hidden=20, lr=0.001):
        self.actor_net = Net(n_features, n_hidden, n_actions, activate=True)
        self.optimizer = torch.optim.Adam(self.actor_net.parameters(), lr=lr)

    def choose_action(self, s):
        s = torch.Tensor(s[np.newaxis, :])
        probs = self.actor_net(s)
        return np.random.choice(np.arange(probs.shape[1]), p=probs.data.numpy().ravel())

    def learn(self, s, a, td):
        s = torch.Tensor(s[np.newaxis, :])
        acts_prob = self.actor_net(s)
        log_prob = torch.log(acts_prob[0, a])
        exp_v = torch.mean(log_prob * td)

        loss = -exp_v
        self.optimizer.zero_grad()
        loss.backward(retain_graph=True)
        self.optimizer.step()
        return exp_v


class Critic(object):
    def __init__(self, n_features, lr=0.01):
        self.critic_net = Net(n_features, 20, 1)
        self.optimizer = torch.optim.Adam(self.critic_net.parameters(), lr=lr)

    def learn(self, s, r, s_):
        s, s_ = torch.Tensor(s[np.newaxis, :]), torch.Tensor(s_[np.newaxis, :])
        v, v_ = self.critic_net(s), self.critic_net(s_)
        td_error = r + GAMMA * v_ - v
        loss = td_error ** 2

        self.optimizer.zero_grad()
        loss.backward(retain_graph=True)
        self.optimizer.step()
        return td_error


actor = Actor(n_features=N_F, n_actions=N_A, lr=LR_A)
critic = Critic(n_features=N_F, lr=LR_C)

for i_episode in range(MAX_EPISODE):
    s = np.random.randn(N_F).astype(np.float32)
    t = 0
    track_r = []
    while True:
        a = actor.choose_action(s)
        s_ = np.random.randn(N_F).astype(np.float32)
        r = 1.0
        done = t == MAX_EP_STEPS - 1
        if done:
            r = -20
        track_r.append(r)

        td_error = critic.learn(s, r, s_)
        actor.learn(s, a, td_error)

        s = s_
        t += 1
        if done or t >= MAX_EP_STEPS:
            print("episode: ", i_episode, "  reward:", int(sum(track_r)))
            break
