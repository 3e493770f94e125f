"""A small notebook program shared by the notebook tests: a target built from a requires-grad
tensor in one cell and consumed by `train_step()` in the next (a stale graph from the second call)."""

SETUP = """\
import torch
w = torch.nn.Parameter(torch.ones(3))
scale = torch.ones(3, requires_grad=True)
ref = torch.sin(scale * 2)
opt = torch.optim.SGD([w], lr=0.1)
def train_step():
    loss = ((w - ref) ** 2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
