# plain-torch: raises "backward through the graph a second time"
"""GG001: a reference built once, with history, reused as a target every iteration."""
import torch
import torch.nn.functional as F


def buggy():
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(8))
    scale = torch.ones(8, requires_grad=True)  # expect: GG103 scale
    reference = torch.sin(torch.linspace(0, 3, 8) * scale)
    opt = torch.optim.SGD([w], lr=0.1)
    for step in range(3):
        opt.zero_grad()
        loss = F.mse_loss(w, reference)  # expect: GG002 reference
        loss.backward()  # expect: GG001 reference
        opt.step()


def clean():
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(8))
    scale = torch.ones(8)
    reference = torch.sin(torch.linspace(0, 3, 8) * scale)  # no history: built without grad
    opt = torch.optim.SGD([w], lr=0.1)
    for step in range(3):
        opt.zero_grad()
        loss = F.mse_loss(w, reference)
        loss.backward()
        opt.step()
