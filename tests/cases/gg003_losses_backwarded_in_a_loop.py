# plain-torch: raises "backward through the graph a second time"
"""GG003: a multi-task step builds a dict of losses on one shared trunk and calls backward on each
in a loop: the second backward, from the same line, needs the trunk graph the first one freed."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def train(summed):
    torch.manual_seed(0)
    trunk = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
    heads = nn.ModuleDict({"cls": nn.Linear(8, 3), "reg": nn.Linear(8, 1)})
    opt = torch.optim.SGD([*trunk.parameters(), *heads.parameters()], lr=0.1)
    for step in range(3):
        x = torch.randn(5, 4)
        shared = trunk(x)
        losses = {"cls": F.cross_entropy(heads["cls"](shared), torch.randint(0, 3, (5,))),
                  "reg": F.mse_loss(heads["reg"](shared), torch.randn(5, 1))}
        opt.zero_grad()
        if summed:
            sum(losses.values()).backward()
        else:
            for task in losses:
                losses[task].backward()  # expect: GG003 shared
        opt.step()


def buggy():
    train(summed=False)


def clean():
    train(summed=True)
