import torch
import torch.nn as nn


class ContentEncoder(nn.Module):
    def __init__(self, in_dim=32, s_dim=8):
        super().__init__()
        self.fc = nn.Linear(in_dim, s_dim)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class Decoder(nn.Module):
    def __init__(self, s_dim=8, f_dim=16, out_dim=32):
        super().__init__()
        self.fc = nn.Linear(s_dim + f_dim, out_dim)

    def forward(self, s, f):
        return self.fc(torch.cat([s, f], dim=1))
