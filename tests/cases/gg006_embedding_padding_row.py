# plain-torch: raises "a view of a leaf Variable that requires grad is being used in an in-place operation"
"""GG006: keeping an embedding's padding row at zero by writing into the table after each step."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class BagOfWords(nn.Module):
    def __init__(self, vocab=50, dim=8, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.out(self.emb(tokens).mean(1))


def batches():
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        yield torch.randint(0, 50, (4, 6), generator=g), torch.randint(0, 3, (4,), generator=g)


def buggy():
    torch.manual_seed(0)
    model = BagOfWords()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for tokens, label in batches():
        opt.zero_grad()
        F.cross_entropy(model(tokens), label).backward()
        opt.step()
        model.emb.weight[0] = 0.0  # expect: GG006 model.emb.weight


def clean():
    torch.manual_seed(0)
    model = BagOfWords()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for tokens, label in batches():
        opt.zero_grad()
        F.cross_entropy(model(tokens), label).backward()
        opt.step()
        with torch.no_grad():
            model.emb.weight[0] = 0.0
        model.emb.weight.data[1].zero_()
    padded = nn.Embedding(50, 8, padding_idx=0)  # the built-in way
    assert padded.weight[0].abs().sum().item() == 0
