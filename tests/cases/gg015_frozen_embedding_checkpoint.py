# plain-torch: runs
"""GG015: a frozen embedding feeds reentrant-checkpointed blocks: the blocks never learn."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as cp


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ff = nn.Linear(d, d)

    def forward(self, h):
        return h + torch.tanh(self.ff(h))


class Tower(nn.Module):
    def __init__(self, reentrant=True):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.embed.weight.requires_grad_(False)
        self.blocks = nn.ModuleList(Block(8) for _ in range(2))
        self.out = nn.Linear(8, 3)
        self.reentrant = reentrant

    def forward(self, ids):
        h = self.embed(ids)
        for blk in self.blocks:
            h = cp.checkpoint(blk.forward, h, use_reentrant=self.reentrant)  # expect: GG015 h
        return self.out(h.mean(1))


def run(model):
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    g = torch.Generator().manual_seed(3)
    for _ in range(3):
        ids = torch.randint(0, 20, (4, 5), generator=g)
        y = torch.randint(0, 3, (4,), generator=g)
        opt.zero_grad()
        F.cross_entropy(model(ids), y).backward()
        opt.step()  # expect: GG008 model.blocks[0].ff
    return model


def buggy():
    torch.manual_seed(0)
    model = run(Tower())
    assert model.blocks[0].ff.weight.grad is None


def clean():
    torch.manual_seed(0)
    model = run(Tower(reentrant=False))
    assert model.blocks[0].ff.weight.grad is not None
    # reentrant, with an input that requires grad (enable_input_require_grads)
    torch.manual_seed(0)
    model = Tower()
    model.embed.register_forward_hook(lambda m, i, o: o.requires_grad_(True))
    model = run(model)
    assert model.blocks[0].ff.weight.grad is not None
    # evaluation under no_grad
    with torch.no_grad():
        model(torch.randint(0, 20, (2, 5)))
