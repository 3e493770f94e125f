# plain-torch: runs
"""GG007: fine-tuning only the new rows of an embedding by handing a slice to the optimizer."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Tagger(nn.Module):
    def __init__(self, vocab=120, dim=8, tags=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, tags)

    def forward(self, tokens):
        return self.proj(self.emb(tokens))


def buggy():
    torch.manual_seed(0)
    model = Tagger()
    n_old = 100
    try:
        opt = torch.optim.Adam([model.emb.weight[n_old:]], lr=1e-3)  # expect: GG007 -
    except ValueError as err:
        assert "non-leaf" in str(err)
    else:
        raise AssertionError("the optimizer accepted a slice of a parameter")


def clean():
    torch.manual_seed(0)
    model = Tagger()
    n_old = 100
    mask = torch.zeros(120, 1)
    mask[n_old:] = 1.0
    model.emb.weight.register_hook(lambda g: g * mask)  # train only the new rows
    opt = torch.optim.Adam([{"params": [model.emb.weight]},
                            {"params": model.proj.parameters(), "lr": 1e-2}], lr=1e-3)
    tokens, tags = torch.randint(0, 120, (4, 7)), torch.randint(0, 5, (4, 7))
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(model(tokens).flatten(0, 1), tags.flatten()).backward()
        assert model.emb.weight.grad[:n_old].abs().sum() == 0
        opt.step()
