# plain-torch: raises "Trying to backward through the graph a second time"
"""GG001: a two-pass update (compute, backward, perturb, compute again) sums its per-term
losses into one variable and forgets to reset it before the second pass, so the second backward
runs into the first pass's freed graph. Reported as a stale accumulator with fix-at its reset."""
import torch
import torch.nn as nn


def terms(model, x, ys):
    out = model(x)
    return [((out[:, k] - y) ** 2).mean() for k, y in enumerate(ys)]


def two_pass(reset: bool):
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, ys = torch.randn(6, 4), [torch.randn(6) for _ in range(3)]
    for _ in range(2):
        total = 0
        for term in terms(model, x, ys):
            total = total + term
        opt.zero_grad()
        total.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.01 * p.grad.sign())  # perturb, as sharpness-aware steps do
        if reset:
            total = 0
        for term in terms(model, x, ys):
            total = total + term
        total.backward()  # expect: GG001 total
        opt.step()


def buggy():
    two_pass(reset=False)


def clean():
    two_pass(reset=True)
