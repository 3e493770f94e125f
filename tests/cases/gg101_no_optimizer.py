# plain-torch: runs
"""GG101: a hand-written training loop (no optimizer) smoothing its loss for display."""
import torch


def graph_depth(t):
    depth, node = 0, t.grad_fn
    while node is not None:
        depth += 1
        nxt = [f for f, _ in node.next_functions if f is not None and type(f).__name__ != "AccumulateGrad"]
        node = nxt[0] if nxt else None
    return depth


def data():
    g = torch.Generator().manual_seed(25)
    x = torch.randn(40, 1, generator=g)
    return x, 3 * x - 1 + 0.1 * torch.randn(40, 1, generator=g)


def buggy():
    x, y = data()
    w = torch.zeros(1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    smooth = None
    for step in range(6):
        loss = ((x * w + b - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
        w.grad = None
        b.grad = None
        smooth = loss if smooth is None else 0.9 * smooth + 0.1 * loss  # expect: GG101 smooth
    assert graph_depth(smooth) > 6  # the smoothed value chains every step's graph


def clean():
    x, y = data()
    w = torch.zeros(1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    smooth = None
    for step in range(6):
        loss = ((x * w + b - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
        w.grad.zero_()
        b.grad.zero_()
        value = loss.detach()
        smooth = value if smooth is None else 0.9 * smooth + 0.1 * value
