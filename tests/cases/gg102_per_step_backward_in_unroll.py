# plain-torch: runs
"""GG102: a recurrent unroll calls backward(retain_graph=True) on every step's loss before the
single optimizer step: each call re-runs the whole unroll so far, so the work grows with every
step and nothing is freed until the iteration ends. The clean twin backpropagates heads of one
shared trunk (the same size every call) and the unroll's summed loss once."""
import torch
import torch.nn as nn


def unroll(per_step_backward: bool):
    torch.manual_seed(0)
    cell = nn.RNNCell(3, 8)
    readout = nn.Linear(8, 1)
    opt = torch.optim.SGD(list(cell.parameters()) + list(readout.parameters()), lr=0.01)
    xs, ys = torch.randn(6, 4, 3), torch.randn(6, 4, 1)
    for _ in range(2):
        opt.zero_grad()
        state = torch.zeros(4, 8)
        total = 0
        for x, y in zip(xs, ys):
            state = cell(x, state)
            step_loss = ((readout(state) - y) ** 2).mean()
            if per_step_backward:
                step_loss.backward(retain_graph=True)  # expect: GG102 state
            else:
                total = total + step_loss
        if not per_step_backward:
            total.backward()
        opt.step()


def buggy():
    unroll(per_step_backward=True)
    # plain PyTorch runs, only slower and slower: the silent damage is the cost


def clean():
    unroll(per_step_backward=False)
    torch.manual_seed(0)
    trunk = nn.Linear(5, 8)
    heads = nn.ModuleList([nn.Linear(8, 1) for _ in range(4)])
    opt = torch.optim.SGD(list(trunk.parameters()) + list(heads.parameters()), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        feat = torch.tanh(trunk(torch.randn(4, 5)))
        for head in heads:
            head(feat).pow(2).mean().backward(retain_graph=True)  # same graph size each call
        opt.step()
