# plain-torch: runs
"""GG102: an embedding of a fixed prompt computed once, with history, re-used by every step."""
import torch
import torch.nn as nn


def setup():
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    adapter = nn.Linear(4, 4)
    prompt = torch.randn(1, 8)
    return encoder, adapter, prompt


def buggy():
    encoder, adapter, prompt = setup()
    opt = torch.optim.SGD(adapter.parameters(), lr=0.1)
    anchor = encoder(prompt)  # computed once, outside the loop, with the encoder's history
    for _ in range(3):
        z = adapter(torch.randn(5, 4))
        loss = ((z - anchor) ** 2).mean()
        opt.zero_grad()
        loss.backward(retain_graph=True)  # expect: GG102 anchor, GG001 anchor
        opt.step()
    # the retained encoder graph is run every step: the frozen encoder keeps collecting gradient
    assert encoder[0].weight.grad is not None and encoder[0].weight.grad.abs().sum() > 0


def clean():
    encoder, adapter, prompt = setup()
    opt = torch.optim.SGD(adapter.parameters(), lr=0.1)
    with torch.no_grad():
        anchor = encoder(prompt)
    for _ in range(3):
        z = adapter(torch.randn(5, 4))
        loss = ((z - anchor) ** 2).mean()
        aux = z.pow(2).mean()
        opt.zero_grad()
        loss.backward(retain_graph=True)  # a second loss of the same iteration follows
        aux.backward()
        opt.step()
