# plain-torch: raises "a leaf Variable that requires grad"
"""GG006: weights edited by hand through a loop variable and through a subscript by a variable;
the findings name the tensor as written on the offending line (`block.proj.weight`,
`net.layers[k].bias`), not the canonical module path."""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def rescale(net, edit_under_no_grad):
    for block in net.layers:
        if edit_under_no_grad:
            with torch.no_grad():
                block.proj.weight[0] = 0.0
        else:
            block.proj.weight[0] = 0.0  # expect: GG006 block.proj.weight


def buggy():
    torch.manual_seed(0)
    try:
        rescale(Net(), edit_under_no_grad=False)
    except RuntimeError:  # PyTorch refuses; the second spelling follows
        pass
    net = Net()
    k = 1
    net.layers[k].proj.bias[:2] += 1.0  # expect: GG006 net.layers[k].proj.bias


def clean():
    torch.manual_seed(0)
    net = Net()
    rescale(net, edit_under_no_grad=True)
    k = 1
    with torch.no_grad():
        net.layers[k].proj.bias[:2] += 1.0
    net(torch.randn(2, 4)).sum().backward()
