# plain-torch: runs
"""GG011: modules that existed when the optimizer was built but are in none of its parameter
groups, although every backward computes their gradients: a projection head applied to the
model's features, and the one stage a list of per-stage parameter groups forgot."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(12, 16)

    def forward(self, x):
        return F.relu(self.body(x))


class Staged(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(12, 16)
        self.block1 = nn.Linear(16, 16)
        self.block2 = nn.Linear(16, 16)
        self.out = nn.Linear(16, 3)

    def forward(self, x):
        h = torch.tanh(self.stem(x))
        return self.out(F.relu(self.block2(F.relu(self.block1(h)))))


def batches(n=3):
    g = torch.Generator().manual_seed(21)
    for _ in range(n):
        yield torch.randn(8, 12, generator=g), torch.randint(0, 3, (8,), generator=g)


def buggy():
    torch.manual_seed(0)
    encoder = Encoder()
    projector = nn.Linear(16, 3)
    opt = torch.optim.SGD(encoder.parameters(), lr=0.1)
    start = projector.weight.detach().clone()
    for x, y in batches():
        opt.zero_grad()
        logits = projector(encoder(x))  # expect: GG011 projector
        F.cross_entropy(logits, y).backward()
        opt.step()
    assert projector.weight.grad is not None and torch.equal(projector.weight, start)

    net = Staged()
    stages = torch.optim.SGD([{"params": net.block1.parameters()},
                              {"params": net.block2.parameters()},
                              {"params": net.out.parameters(), "lr": 0.05}], lr=0.1)
    for x, y in batches():
        stages.zero_grad()
        F.cross_entropy(net(x), y).backward()
        stages.step()  # expect: GG011 self.stem
    assert net.stem.weight.grad is not None


def clean():
    torch.manual_seed(0)
    encoder = Encoder()
    projector = nn.Linear(16, 3)
    opt = torch.optim.SGD(list(encoder.parameters()) + list(projector.parameters()), lr=0.1)
    for x, y in batches():
        opt.zero_grad()
        F.cross_entropy(projector(encoder(x)), y).backward()
        opt.step()
    # the projector trained by an optimizer of its own
    encoder, projector = Encoder(), nn.Linear(16, 3)
    opt_e = torch.optim.SGD(encoder.parameters(), lr=0.1)
    opt_p = torch.optim.Adam(projector.parameters(), lr=1e-3)
    for x, y in batches():
        opt_e.zero_grad()
        opt_p.zero_grad()
        F.cross_entropy(projector(encoder(x)), y).backward()
        opt_e.step()
        opt_p.step()
    # the stem frozen on purpose
    net = Staged()
    net.stem.requires_grad_(False)
    stages = torch.optim.SGD([{"params": net.block1.parameters()},
                              {"params": net.block2.parameters()},
                              {"params": net.out.parameters()}], lr=0.1)
    for x, y in batches():
        stages.zero_grad()
        F.cross_entropy(net(x), y).backward()
        stages.step()
    # a feature extractor left out of a head-only optimizer (freezing by omission)
    encoder, head = Encoder(), nn.Linear(16, 3)
    head_only = torch.optim.SGD(head.parameters(), lr=0.1)
    for x, y in batches():
        head_only.zero_grad()
        F.cross_entropy(head(encoder(x)), y).backward()
        head_only.step()
    # a teacher run with grad on whose output only meets the student's at the loss
    student, teacher = nn.Sequential(Encoder(), nn.Linear(16, 3)), nn.Sequential(Encoder(), nn.Linear(16, 3))
    opt_s = torch.optim.SGD(student.parameters(), lr=0.1)
    for x, _ in batches():
        opt_s.zero_grad()
        F.mse_loss(student(x), teacher(x)).backward()
        opt_s.step()
    # no optimizer step over the probe: input saliency of a trained model
    probe = nn.Linear(16, 3)
    x = torch.randn(4, 12, requires_grad=True)
    probe(encoder(x)).sum().backward()
    assert x.grad is not None
