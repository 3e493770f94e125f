import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)
np.random.seed(0)


class FCQSA(nn.Module):
    def __init__(self, input_dim, output_dim, hidden_dims=(32, 32)):
        super(FCQSA, self).__init__()
        self.input_layer = nn.Linear(input_dim + output_dim, hidden_dims[0])
        self.hidden_layer = nn.Linear(hidden_dims[0], hidden_dims[1])
        self.output_layer = nn.Linear(hidden_dims[-1], 1)

    def forward(self, state, action):
        x = torch.cat((state, action), dim=1)
        x = F.relu(self.input_layer(x))
        x = F.relu(self.hidden_layer(x))
        return self.output_layer(x)


class FCGP(nn.Module):
    def __init__(self, input_dim, action_dim, hidden_dims=(32, 32), entropy_lr=0.001):
        super(FCGP, self).__init__()
        self.input_layer = nn.Linear(input_dim, hidden_dims[0])
        self.hidden_layer = nn.Linear(hidden_dims[0], hidden_dims[1])
        self.output_layer_mean = nn.Linear(hidden_dims[-1], action_dim)
        self.output_layer_log_std = nn.Linear(hidden_dims[-1], action_dim)
        self.target_entropy = -float(action_dim)
        self.logalpha = torch.zeros(1, requires_grad=True)
        self.alpha_optimizer = optim.Adam([self.logalpha], lr=entropy_lr)

    def forward(self, state):
        x = F.relu(self.input_layer(state))
        x = F.relu(self.hidden_layer(x))
        return self.output_layer_mean(x), self.output_layer_log_std(x).clamp(-20, 2)

    def full_pass(self, state, epsilon=1e-6):
        mean, log_std = self.forward(state)
        pi_s = torch.distributions.Normal(mean, log_std.exp())
        pre_tanh_action = pi_s.rsample()
        tanh_action = torch.tanh(pre_tanh_action)
        log_prob = pi_s.log_prob(pre_tanh_action) - torch.log((1 - tanh_action.pow(2)).clamp(0, 1) + epsilon)
        log_prob = log_prob.sum(dim=1, keepdim=True)
        return tanh_action, log_prob, torch.tanh(mean)


class SAC():
    def __init__(self, nS, nA, gamma=0.99):
        self.gamma = gamma
        self.policy_model = FCGP(nS, nA)
        self.policy_optimizer = optim.Adam(self.policy_model.parameters(), lr=0.0005)
        self.online_value_model_a = FCQSA(nS, nA)
        self.online_value_model_b = FCQSA(nS, nA)
        self.target_value_model_a = FCQSA(nS, nA)
        self.target_value_model_b = FCQSA(nS, nA)
        self.target_value_model_a.load_state_dict(self.online_value_model_a.state_dict())
        self.target_value_model_b.load_state_dict(self.online_value_model_b.state_dict())
        self.value_optimizer_a = optim.Adam(self.online_value_model_a.parameters(), lr=0.0007)
        self.value_optimizer_b = optim.Adam(self.online_value_model_b.parameters(), lr=0.0007)
        self.value_max_grad_norm = float('inf')
        self.policy_max_grad_norm = float('inf')

    def optimize_model(self, experiences):
        states, actions, rewards, next_states, is_terminals = experiences
        batch_size = len(is_terminals)

        current_actions, logpi_s, _ = self.policy_model.full_pass(states)

        target_alpha = (logpi_s + self.policy_model.target_entropy).detach()
        alpha_loss = -(self.policy_model.logalpha * target_alpha).mean()

        self.policy_model.alpha_optimizer.zero_grad()
        alpha_loss.backward()
        self.policy_model.alpha_optimizer.step()
        alpha = self.policy_model.logalpha.exp()

        current_q_sa_a = self.online_value_model_a(states, current_actions)
        current_q_sa_b = self.online_value_model_b(states, current_actions)
        current_q_sa = torch.min(current_q_sa_a, current_q_sa_b)
        policy_loss = (alpha * logpi_s - current_q_sa).mean()

        ap, logpi_sp, _ = self.policy_model.full_pass(next_states)
        q_spap_a = self.target_value_model_a(next_states, ap)
        q_spap_b = self.target_value_model_b(next_states, ap)
        q_spap = torch.min(q_spap_a, q_spap_b) - alpha * logpi_sp
        target_q_sa = (rewards + self.gamma * q_spap * (1 - is_terminals)).detach()

        q_sa_a = self.online_value_model_a(states, actions)
        q_sa_b = self.online_value_model_b(states, actions)
        qa_loss = (q_sa_a - target_q_sa).pow(2).mul(0.5).mean()
        qb_loss = (q_sa_b - target_q_sa).pow(2).mul(0.5).mean()

        self.value_optimizer_a.zero_grad()
        qa_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.online_value_model_a.parameters(),
                                       self.value_max_grad_norm)
        self.value_optimizer_a.step()

        self.value_optimizer_b.zero_grad()
        qb_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.online_value_model_b.parameters(),
                                       self.value_max_grad_norm)
        self.value_optimizer_b.step()

        self.policy_optimizer.zero_grad()
        policy_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.policy_model.parameters(),
                                       self.policy_max_grad_norm)
        self.policy_optimizer.step()


nS, nA, batch = 3, 1, 32
agent = SAC(nS, nA)
for step in range(3):
    experiences = (torch.randn(batch, nS), torch.rand(batch, nA) * 2 - 1, torch.randn(batch, 1),
                   torch.randn(batch, nS), (torch.rand(batch, 1) < 0.05).float())
    agent.optimize_model(experiences)
print("done")
