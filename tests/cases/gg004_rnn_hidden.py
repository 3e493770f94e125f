# plain-torch: raises "backward through the graph a second time"
"""GG004: an RNN hidden state carried across batches without detach."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def buggy():
    torch.manual_seed(0)
    rnn = nn.RNN(3, 5, batch_first=True)
    head = nn.Linear(5, 1)
    opt = torch.optim.Adam([*rnn.parameters(), *head.parameters()], lr=1e-3)
    hidden = torch.zeros(1, 2, 5)
    for step in range(3):
        x, y = torch.randn(2, 4, 3), torch.randn(2, 4, 1)
        out, hidden = rnn(x, hidden)
        loss = F.mse_loss(head(out), y)
        opt.zero_grad()
        loss.backward()  # expect: GG004 hidden
        opt.step()


def clean():
    torch.manual_seed(0)
    rnn = nn.RNN(3, 5, batch_first=True)
    head = nn.Linear(5, 1)
    opt = torch.optim.Adam([*rnn.parameters(), *head.parameters()], lr=1e-3)
    hidden = torch.zeros(1, 2, 5)
    for step in range(4):
        x, y = torch.randn(2, 4, 3), torch.randn(2, 4, 1)
        hidden = hidden.detach()  # truncated BPTT
        out, hidden = rnn(x, hidden)
        loss = F.mse_loss(head(out), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
