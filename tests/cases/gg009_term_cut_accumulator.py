# plain-torch: runs
"""GG009: one term of a sum is cut (a comparison counts hard hits) and re-enters through an
accumulator made with requires_grad=True: backward runs, the other term trains the model, the
count term trains nothing. Clean: the same sum with a detached baseline as a constant."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    net = nn.Linear(6, 4)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    return net, opt, torch.randn(8, 6), torch.rand(8, 4), torch.randint(0, 4, (8,)).float()


def count_loss(pred, counts):
    total = torch.zeros((), requires_grad=True)  # expect: GG103 total
    for k in range(pred.shape[0]):
        hits = (pred[k] > 0.5).float().sum()
        total = total + (hits - counts[k]).abs()
    return total / pred.shape[0]


def centered_loss(pred, counts):
    baseline = pred.mean().detach()
    total = torch.zeros(())
    for k in range(pred.shape[0]):
        total = total + ((pred[k] - baseline) ** 2).mean()
    return total / pred.shape[0] + counts.mean() * 0


def train(term):
    net, opt, x, y, counts = setup()
    for _ in range(2):
        pred = torch.sigmoid(net(x))
        loss = F.mse_loss(pred, y) + 0.1 * term(pred, counts)
        opt.zero_grad()
        loss.backward()  # expect: GG009 total
        opt.step()


def buggy():
    train(count_loss)


def clean():
    train(centered_loss)
