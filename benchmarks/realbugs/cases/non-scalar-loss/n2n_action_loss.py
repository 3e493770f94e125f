import torch
import torch.nn as nn


class Controller(nn.Module):
    def __init__(self, num_layers=6, hidden=16):
        super().__init__()
        self.num_layers = num_layers
        self.lstm = nn.LSTM(1, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, 2)

    def forward(self, layers):
        out, _ = self.lstm(layers)
        return torch.softmax(self.fc(out.squeeze(0)), dim=-1)


def reward_of(actions):
    compression = actions.float().mean()
    accuracy = 0.9 - 0.3 * compression + 0.05 * torch.rand(())
    return float(compression * (2 - compression) * accuracy)


torch.manual_seed(0)
controller = Controller()
opt = torch.optim.Adam(controller.parameters(), lr=3e-3)
layers = torch.randn(1, 6, 1)
b = 0
decay = 0.9
for epoch in range(3):
    probs = controller(layers)
    m = torch.distributions.Categorical(probs)
    actions = m.sample()
    avgR = reward_of(actions)
    b = decay * b + (1 - decay) * avgR if epoch else avgR
    actionloss = -m.log_prob(actions) * (avgR - b)
    opt.zero_grad()
    actionloss.backward()
    opt.step()
    print(epoch, avgR)
