import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


class DeepQNetwork(nn.Module):
    def __init__(self, lr, n_actions, input_dims):
        super().__init__()
        self.fc1 = nn.Linear(input_dims, 16)
        self.fc2 = nn.Linear(16, n_actions)
        self.optimizer = optim.RMSprop(self.parameters(), lr=lr)
        self.loss = nn.MSELoss()

    def forward(self, state):
        return self.fc2(torch.relu(self.fc1(state)))


class DQNAgent:
    def __init__(self, gamma, lr, n_actions, input_dims, batch_size, replace=4):
        self.gamma = gamma
        self.batch_size = batch_size
        self.input_dims = input_dims
        self.replace_target_cnt = replace
        self.learn_step_counter = 0
        self.q_eval = DeepQNetwork(lr, n_actions, input_dims)
        self.q_next = DeepQNetwork(lr, n_actions, input_dims)

    def sample_memory(self):
        states = torch.randn(self.batch_size, self.input_dims)
        actions = torch.randint(0, 2, (self.batch_size,))
        rewards = torch.randn(self.batch_size)
        states_ = torch.randn(self.batch_size, self.input_dims)
        dones = torch.rand(self.batch_size) < 0.2
        return states, actions, rewards, states_, dones

    def replace_target_network(self):
        if self.learn_step_counter % self.replace_target_cnt == 0:
            self.q_next.load_state_dict(self.q_eval.state_dict())

    def learn(self):
        self.q_eval.optimizer.zero_grad()
        self.replace_target_network()
        states, actions, rewards, states_, dones = self.sample_memory()
        indices = torch.arange(self.batch_size)
        q_pred = self.q_eval.forward(states)[indices, actions]
        q_next = self.q_next.forward(states_).max(dim=1)[0]
        q_next = q_next * (~dones).float()
        q_target = rewards + self.gamma * q_next
        loss = self.q_eval.loss(q_pred, q_target)
        loss.backward()
        self.q_eval.optimizer.step()
        self.learn_step_counter += 1


agent = DQNAgent(gamma=0.99, lr=1e-3, n_actions=2, input_dims=4, batch_size=8)
for _ in range(6):
    agent.learn()
