# plain-torch: runs
"""GG011: an embedding table kept by a plain Python object (a tokenizer-like helper held by a
pipeline object, neither an nn.Module) is used in every step, but the optimizer is built over
the backbone alone: the table gets gradients and never trains. Found through the user objects
that hold it, named as its class assigns it (`self.table`), made where that class builds it;
a weak proxy one of them keeps to the backbone is not looked into."""
import itertools
import weakref

import torch
import torch.nn as nn


class Tokens:
    def __init__(self):
        self.table = nn.Embedding(10, 6)

    def embed(self, ids):
        return self.table(ids)


class Pipeline:
    def __init__(self):
        self.backbone = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
        self.tokens = Tokens()
        self.tokens.consumer = weakref.proxy(self.backbone)  # a back-reference: not a holder


def batches():
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        yield torch.randint(0, 10, (5, 4), generator=g), torch.randn(5, 4, 1, generator=g)


def buggy():
    torch.manual_seed(0)
    pipe = Pipeline()
    opt = torch.optim.SGD(pipe.backbone.parameters(), lr=0.1)
    before = pipe.tokens.table.weight.detach().clone()
    for ids, y in batches():
        x = pipe.tokens.table(ids)  # expect: GG011 self.table
        loss = ((pipe.backbone(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.equal(before, pipe.tokens.table.weight) and pipe.tokens.table.weight.grad is not None


def clean():
    torch.manual_seed(0)
    pipe = Pipeline()
    opt = torch.optim.SGD(itertools.chain(pipe.backbone.parameters(), pipe.tokens.table.parameters()),
                          lr=0.1)
    for ids, y in batches():
        x = pipe.tokens.embed(ids)
        loss = ((pipe.backbone(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
