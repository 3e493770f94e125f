import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ABCConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=3, no_filters=3):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channels, in_channels, kernel_size, kernel_size) * 0.1)
        self.shift_parameters = nn.Parameter(torch.linspace(-1.0, 1.0, no_filters))
        self.beta_values = nn.Parameter(torch.ones(no_filters) / no_filters)
        self.no_filters = no_filters

    def forward(self, x):
        w = self.weight
        mean = w.mean()
        stddev = w.std()
        tiled_filters = (w - mean).unsqueeze(0).expand(self.no_filters, *w.shape)
        expanded_stddev = (self.shift_parameters * stddev).view(-1, 1, 1, 1, 1)
        binarized_filters = torch.sign(tiled_filters + expanded_stddev)
        out = 0
        for i in range(self.no_filters):
            out = out + self.beta_values[i] * F.conv2d(x, binarized_filters[i], padding=1)
        return out


class ABCNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.abc1 = ABCConv2d(1, 8)
        self.abc2 = ABCConv2d(8, 8)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.abc1(x)), 2)
        x = F.max_pool2d(F.relu(self.abc2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


model = ABCNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
images = torch.randn(16, 1, 16, 16)
labels = torch.randint(0, 10, (16,))

for step in range(3):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    print(step, loss.item())
