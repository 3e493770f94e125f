import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal
from torch.nn.functional import mse_loss
from torch.nn.utils import clip_grad_norm_
from torch.optim import Adam

torch.manual_seed(0)


class RecurrentStateSpaceModel(nn.Module):
    def __init__(self, state_dim, action_dim, rnn_hidden_dim, hidden_dim=32, min_stddev=0.1):
        super().__init__()
        self.fc_state_action = nn.Linear(state_dim + action_dim, hidden_dim)
        self.rnn = nn.GRUCell(hidden_dim, rnn_hidden_dim)
        self.fc_rnn_hidden = nn.Linear(rnn_hidden_dim, hidden_dim)
        self.fc_state_mean_prior = nn.Linear(hidden_dim, state_dim)
        self.fc_state_stddev_prior = nn.Linear(hidden_dim, state_dim)
        self._min_stddev = min_stddev

    def prior(self, state, action, rnn_hidden):
        hidden = F.elu(self.fc_state_action(torch.cat([state, action], dim=1)))
        rnn_hidden = self.rnn(hidden, rnn_hidden)
        hidden = F.elu(self.fc_rnn_hidden(rnn_hidden))
        mean = self.fc_state_mean_prior(hidden)
        stddev = F.softplus(self.fc_state_stddev_prior(hidden)) + self._min_stddev
        return Normal(mean, stddev), rnn_hidden


class RewardModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, hidden_dim=32):
        super().__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, 1)

    def forward(self, state, rnn_hidden):
        return self.fc2(F.elu(self.fc1(torch.cat([state, rnn_hidden], dim=1))))


class ValueModel(RewardModel):
    pass


class ActionModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, action_dim, hidden_dim=32):
        super().__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, hidden_dim)
        self.fc_mean = nn.Linear(hidden_dim, action_dim)

    def forward(self, state, rnn_hidden):
        return torch.tanh(self.fc_mean(F.elu(self.fc1(torch.cat([state, rnn_hidden], dim=1)))))


def lambda_return(rewards, values, gamma, lambda_):
    V_lambda = torch.zeros_like(rewards)
    H = rewards.shape[0] - 1
    V_n = torch.zeros_like(rewards)
    V_n[H] = values[H]
    for n in range(1, H + 1):
        V_n[:-n] = (gamma ** n) * values[n:]
        for k in range(1, n + 1):
            if k == n:
                V_n[:-n] += (gamma ** (n - 1)) * rewards[k:]
            else:
                V_n[:-n] += (gamma ** (k - 1)) * rewards[k:-n + k]
        if n == H:
            V_lambda += (lambda_ ** (H - 1)) * V_n
        else:
            V_lambda += (1 - lambda_) * (lambda_ ** (n - 1)) * V_n
    return V_lambda


state_dim, rnn_hidden_dim, action_dim = 6, 12, 2
imagination_horizon, gamma, lambda_, clip = 4, 0.99, 0.95, 100

rssm = RecurrentStateSpaceModel(state_dim, action_dim, rnn_hidden_dim)
reward_model = RewardModel(state_dim, rnn_hidden_dim)
value_model = ValueModel(state_dim, rnn_hidden_dim)
action_model = ActionModel(state_dim, rnn_hidden_dim, action_dim)
value_optimizer = Adam(value_model.parameters(), lr=8e-5, eps=1e-4)
action_optimizer = Adam(action_model.parameters(), lr=8e-5, eps=1e-4)

for update_step in range(3):
    flatten_states = torch.randn(10, state_dim)
    flatten_rnn_hiddens = torch.randn(10, rnn_hidden_dim)

    imaginated_states = torch.zeros(imagination_horizon + 1, *flatten_states.shape)
    imaginated_rnn_hiddens = torch.zeros(imagination_horizon + 1, *flatten_rnn_hiddens.shape)
    imaginated_states[0] = flatten_states
    imaginated_rnn_hiddens[0] = flatten_rnn_hiddens
    for h in range(1, imagination_horizon + 1):
        actions = action_model(flatten_states, flatten_rnn_hiddens)
        flatten_states_prior, flatten_rnn_hiddens = rssm.prior(flatten_states, actions, flatten_rnn_hiddens)
        flatten_states = flatten_states_prior.rsample()
        imaginated_states[h] = flatten_states
        imaginated_rnn_hiddens[h] = flatten_rnn_hiddens

    flatten_imaginated_states = imaginated_states.view(-1, state_dim)
    flatten_imaginated_rnn_hiddens = imaginated_rnn_hiddens.view(-1, rnn_hidden_dim)
    imaginated_rewards = reward_model(flatten_imaginated_states,
                                      flatten_imaginated_rnn_hiddens).view(imagination_horizon + 1, -1)
    imaginated_values = value_model(flatten_imaginated_states,
                                    flatten_imaginated_rnn_hiddens).view(imagination_horizon + 1, -1)
    lambda_value_target = lambda_return(imaginated_rewards, imaginated_values, gamma, lambda_)

    value_loss = 0.5 * mse_loss(imaginated_values, lambda_value_target.detach())
    value_optimizer.zero_grad()
    value_loss.backward(retain_graph=True)
    clip_grad_norm_(value_model.parameters(), clip)
    value_optimizer.step()

    action_loss = -1 * (lambda_value_target.mean())
    action_optimizer.zero_grad()
    action_loss.backward()
    clip_grad_norm_(action_model.parameters(), clip)
    action_optimizer.step()
    print(update_step, action_loss.item(), value_loss.item())
