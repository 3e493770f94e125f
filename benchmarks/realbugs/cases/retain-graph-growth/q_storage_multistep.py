import random

import torch
from torch import nn, optim
from torch.nn import functional as F

torch.manual_seed(0)
random.seed(0)


def select_value(QOutput, indexList):
    output = []
    for batch, index in enumerate(indexList):
        output.append(QOutput[batch, index])
    return torch.stack(output, dim=0)


def take_action(QFunc, states):
    output, states = QFunc(*states)
    index = output.argmax(-1)
    return index, states


class Storage:
    def __init__(self, decay_value, multistep=True):
        self.decay_value = decay_value
        self.data = []
        self.multistep = multistep

    def save(self, states, actions, rewards):
        self.data.append([states, actions, rewards])

    def optimize(self, QFunc, Qoptim, QEval, QlossFunc):
        for S, action, reward in self.data:
            output, _ = QFunc(*S[0])
            Q_value = select_value(output, action[0])
            Q_NSval, _ = QEval(*S[-1])
            Q_NSval = Q_NSval.max(-1)[0]
            r = sum(reward)
            loss = QlossFunc(Q_value, r + Q_NSval)

            Qoptim.zero_grad()
            loss.backward(retain_graph=True)
            Qoptim.step()


class Dual(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.advantage = nn.Linear(in_features, out_features, bias=False)
        self.average = nn.Linear(in_features, 1, bias=False)

    def forward(self, input):
        advantage = self.advantage(input)
        advantage = advantage - advantage.mean()
        return advantage + self.average(input)


class Q(nn.Module):
    def __init__(self, voc_size, hidden_size):
        super().__init__()
        self.embedding = nn.Embedding(voc_size, hidden_size)
        self.dec = nn.GRUCell(2 * hidden_size, hidden_size)
        self.dual = Dual(hidden_size, voc_size)

    def forward(self, input, states, gru_out):
        states = self.dec(torch.cat([self.embedding(input), gru_out.mean(0)], -1), states)
        return self.dual(states), states


class G(nn.Module):
    def __init__(self, voc_size, hidden_size, sos=0):
        super().__init__()
        self.embedding = nn.Embedding(voc_size, hidden_size)
        self.encoder = nn.GRU(hidden_size, hidden_size)
        self.QFunc = Q(voc_size, hidden_size)
        self.hidden_size = hidden_size
        self.sos = sos


voc_size, hidden_size, timesteps, batch = 10, 8, 6, 3
GUpdate = G(voc_size, hidden_size)
GTarget = G(voc_size, hidden_size)
Goptim = optim.Adam(GUpdate.parameters(), lr=1e-3)
GLossFunc = nn.MSELoss()
storage = Storage(decay_value=0.1)

for it in range(2):
    batched_data = torch.randint(0, voc_size, (timesteps, batch))
    states = torch.zeros(1, batch, hidden_size)
    encoded, states = GUpdate.encoder(GUpdate.embedding(batched_data), states)
    states = states[0]
    word = torch.tensor([GUpdate.sos] * batch)

    current_step = 0
    while current_step < timesteps:
        step = random.randint(1, 3)
        states_list, reward_list, action_list = [], [], []
        S = [word, states, encoded]
        states_list.append(S)
        for _ in range(step):
            action, states = take_action(GUpdate.QFunc, S)
            S = [action, states, encoded]
            states_list.append(S)
            reward_list.append(torch.rand(batch))
            action_list.append(action)
        current_step += step
        word = action
        storage.save(states_list, action_list, reward_list)
        storage.optimize(GUpdate.QFunc, Goptim, GTarget.QFunc, GLossFunc)
