# plain-torch: runs
"""GG011: a hand-built net keeps its weight tensors in a plain list and the optimizer is given
only part of it; the last layer's weights get gradients that no optimizer applies."""
import torch
import torch.nn.functional as F


def batches(n=4):
    g = torch.Generator().manual_seed(11)
    for _ in range(n):
        yield torch.randn(6, 5, generator=g), torch.randint(0, 2, (6,), generator=g)


def make(seed=0):
    torch.manual_seed(seed)
    weights = [(torch.randn(5, 5) * 0.3).requires_grad_() for _ in range(3)]
    readout = torch.randn(5, 2, requires_grad=True)
    return weights, readout


def forward(weights, readout, x):
    h = x
    for w in weights:
        h = torch.tanh(h @ w)  # expect: GG011 weights[-1]
    return h @ readout


def buggy():
    weights, readout = make()
    before = weights[2].detach().clone()
    opt = torch.optim.SGD([readout] + weights[:2], lr=0.1)
    for x, y in batches():
        opt.zero_grad()
        F.cross_entropy(forward(weights, readout, x), y).backward()
        opt.step()
    assert torch.equal(weights[2], before) and weights[2].grad is not None


def clean():
    weights, readout = make()
    opt = torch.optim.SGD([readout] + weights, lr=0.1)
    for x, y in batches():
        opt.zero_grad()
        F.cross_entropy(forward(weights, readout, x), y).backward()
        opt.step()
    # an input kept next to the trained tensors, its gradient read as a saliency map
    w = torch.randn(5, 2, requires_grad=True)
    tensors = {"w": w}
    opt = torch.optim.SGD([w], lr=0.1)
    for x, y in batches(2):
        tensors["x"] = x.clone().requires_grad_()
        opt.zero_grad()
        F.cross_entropy(tensors["x"] @ tensors["w"], y).backward()
        saliency = tensors["x"].grad.abs().sum(1)
        opt.step()
    assert saliency.shape == (6,)
