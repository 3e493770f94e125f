# plain-torch: runs
"""GG101: a tensor running sum added to in place before the backward, which starts from the loss
divided by the accumulation steps (`loss_sum += loss`, then `(loss / k).backward()`): the sum lies
in that backward's window of the graph without being traversed, and keeps every step's graph."""
import torch
import torch.nn as nn


def batches(n):
    g = torch.Generator().manual_seed(5)
    for _ in range(n):
        x = torch.randn(6, 5, generator=g)
        yield x, x.sum(1, keepdim=True)


def buggy():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    accum = 2
    for epoch in range(2):
        epoch_loss = torch.zeros(())
        for i, (x, y) in enumerate(batches(10)):
            loss = (net(x) - y).pow(2).mean()
            epoch_loss += loss  # expect: GG101 epoch_loss
            (loss / accum).backward()
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
        print(epoch, float(epoch_loss) / 10)
    assert epoch_loss.grad_fn is not None  # every step's graph is still reachable from the sum


def clean():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    accum = 2
    for epoch in range(2):
        epoch_loss = torch.zeros(())
        last = None
        for i, (x, y) in enumerate(batches(10)):
            loss = (net(x) - y).pow(2).mean()
            epoch_loss += loss.detach()
            scaled = loss / accum
            scaled.backward()
            last = loss  # this step's loss only, whose graph the backward just went through
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
        print(epoch, float(epoch_loss) / 10, float(last))
