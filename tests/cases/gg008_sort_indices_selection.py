# plain-torch: runs
"""GG008: a learned scorer ranks the items with `sort` and only the ranking's indices pick the
items kept (`feats[order[:k]]`): the values of the sort keep their gradient, the indices have
none, so the scorer never learns. Its clean twin scales the kept items by their scores (as
top-k pooling does), and a max over a dim whose values feed the loss is left alone."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.scorer = nn.Linear(5, 1)

    def forward(self, feats, k, gate):
        s = self.scorer(feats).squeeze(-1)
        best, order = s.sort(descending=True)
        kept = feats[order[:k]]
        if gate:
            kept = kept * torch.sigmoid(best[:k]).unsqueeze(-1)
        return kept


def run(gate: bool):
    torch.manual_seed(0)
    ranker = Ranker()
    head = nn.Linear(5, 2)
    opt = torch.optim.SGD(list(ranker.parameters()) + list(head.parameters()), lr=0.1)
    feats, y = torch.randn(10, 5), torch.tensor([1])
    for _ in range(3):
        opt.zero_grad()
        logits = head(ranker(feats, 4, gate).mean(0, keepdim=True))
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()  # expect: GG008 ranker.scorer
        if not gate:
            assert ranker.scorer.weight.grad is None
    return ranker


def buggy():
    run(gate=False)


def clean():
    run(gate=True)
    # `values, idx = out.max(1)`: the values train, the indices only count hits
    torch.manual_seed(0)
    net = nn.Linear(3, 4)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(8, 3)
    for _ in range(2):
        opt.zero_grad()
        best, pred = net(x).max(1)
        hits = (pred == 2).sum()
        (-best.mean()).backward()
        opt.step()
        assert hits.item() >= 0
