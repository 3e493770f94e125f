import torch as T
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions.normal import Normal

T.manual_seed(0)


class CriticNetwork(nn.Module):
    def __init__(self, beta, input_dims, n_actions, fc1_dims=32):
        super(CriticNetwork, self).__init__()
        self.fc1 = nn.Linear(input_dims + n_actions, fc1_dims)
        self.q = nn.Linear(fc1_dims, 1)
        self.optimizer = optim.Adam(self.parameters(), lr=beta)

    def forward(self, state, action):
        return self.q(F.relu(self.fc1(T.cat([state, action], dim=1))))


class ValueNetwork(nn.Module):
    def __init__(self, beta, input_dims, fc1_dims=32):
        super(ValueNetwork, self).__init__()
        self.fc1 = nn.Linear(input_dims, fc1_dims)
        self.v = nn.Linear(fc1_dims, 1)
        self.optimizer = optim.Adam(self.parameters(), lr=beta)

    def forward(self, state):
        return self.v(F.relu(self.fc1(state)))


class ActorNetwork(nn.Module):
    def __init__(self, alpha, input_dims, n_actions, fc1_dims=32):
        super(ActorNetwork, self).__init__()
        self.reparam_noise = 1e-6
        self.fc1 = nn.Linear(input_dims, fc1_dims)
        self.mu = nn.Linear(fc1_dims, n_actions)
        self.sigma = nn.Linear(fc1_dims, n_actions)
        self.optimizer = optim.Adam(self.parameters(), lr=alpha)

    def sample_normal(self, state, reparameterize=True):
        prob = F.relu(self.fc1(state))
        mu, sigma = self.mu(prob), T.clamp(self.sigma(prob), min=self.reparam_noise, max=1)
        probabilities = Normal(mu, sigma)
        actions = probabilities.rsample() if reparameterize else probabilities.sample()
        action = T.tanh(actions)
        log_probs = probabilities.log_prob(actions) - T.log(1 - action.pow(2) + self.reparam_noise)
        return action, log_probs.sum(1, keepdim=True)


class Agent():
    def __init__(self, alpha=0.0003, beta=0.0003, input_dims=4, gamma=0.99, n_actions=2, batch_size=16, reward_scale=2):
        self.gamma = gamma
        self.batch_size = batch_size
        self.actor = ActorNetwork(alpha, input_dims, n_actions=n_actions)
        self.critic_1 = CriticNetwork(beta, input_dims, n_actions=n_actions)
        self.critic_2 = CriticNetwork(beta, input_dims, n_actions=n_actions)
        self.value = ValueNetwork(beta, input_dims)
        self.target_value = ValueNetwork(beta, input_dims)
        self.scale = reward_scale
        self.target_value.load_state_dict(self.value.state_dict())

    def learn(self, state, action, reward, state_, done):
        value = self.value(state).view(-1)
        value_ = self.target_value(state_).view(-1)
        value_[done] = 0.0

        actions, log_probs = self.actor.sample_normal(state, reparameterize=False)
        log_probs = log_probs.view(-1)
        q1_new_policy = self.critic_1.forward(state, actions)
        q2_new_policy = self.critic_2.forward(state, actions)
        critic_value = T.min(q1_new_policy, q2_new_policy)
        critic_value = critic_value.view(-1)

        self.value.optimizer.zero_grad()
        value_target = critic_value - log_probs
        value_loss = 0.5 * F.mse_loss(value, value_target)
        value_loss.backward(retain_graph=True)
        self.value.optimizer.step()

        self.critic_1.optimizer.zero_grad()
        self.critic_2.optimizer.zero_grad()
        q_hat = self.scale*reward + self.gamma*value_
        q1_old_policy = self.critic_1.forward(state, action).view(-1)
        q2_old_policy = self.critic_2.forward(state, action).view(-1)
        critic_1_loss = 0.5 * F.mse_loss(q1_old_policy, q_hat)
        critic_2_loss = 0.5 * F.mse_loss(q2_old_policy, q_hat)

        critic_loss = critic_1_loss + critic_2_loss
        critic_loss.backward()
        self.critic_1.optimizer.step()
        self.critic_2.optimizer.step()


agent = Agent()
for step in range(4):
    state = T.randn(agent.batch_size, 4)
    action = T.rand(agent.batch_size, 2) * 2 - 1
    reward = T.randn(agent.batch_size)
    state_ = T.randn(agent.batch_size, 4)
    done = T.rand(agent.batch_size) < 0.1
    agent.learn(state, action, reward, state_, done)
