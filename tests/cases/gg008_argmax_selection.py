# plain-torch: runs
"""GG008: hard attention by argmax: the query that scores the keys never learns."""
import torch
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    keys = torch.randn(6, 4)
    values = torch.randn(6, 2)
    query = torch.randn(4, requires_grad=True)
    proj = torch.randn(2, 2, requires_grad=True)
    return keys, values, query, proj


def buggy():
    keys, values, query, proj = setup()
    opt = torch.optim.SGD([query, proj], lr=0.1)
    for _ in range(2):
        scores = keys @ query
        picked = values[scores.argmax()]
        loss = F.mse_loss(picked @ proj, torch.ones(2))
        opt.zero_grad()
        loss.backward()
        opt.step()  # expect: GG008 query
    assert query.grad is None and proj.grad is not None


def clean():
    keys, values, query, proj = setup()
    opt = torch.optim.SGD([query, proj], lr=0.1)
    for _ in range(2):
        weights = torch.softmax(keys @ query, dim=0)
        picked = weights @ values
        loss = F.mse_loss(picked @ proj, torch.ones(2))
        opt.zero_grad()
        loss.backward()
        opt.step()
