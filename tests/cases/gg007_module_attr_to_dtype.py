# plain-torch: runs
"""GG007: a module keeps a learnable temperature as a plain tensor, cast with .to(dtype)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ContrastiveHead(nn.Module):
    def __init__(self, dim=16, dtype=torch.float64):
        super().__init__()
        self.proj = nn.Linear(dim, dim).to(dtype)
        self.log_temp = torch.zeros(1, requires_grad=True).to(dtype)

    def forward(self, a, b):
        za, zb = F.normalize(self.proj(a), dim=1), F.normalize(self.proj(b), dim=1)
        return za @ zb.t() * self.log_temp.exp()


def buggy():
    torch.manual_seed(0)
    head = ContrastiveHead()
    params = list(head.parameters()) + [head.log_temp]
    try:
        opt = torch.optim.AdamW(params, lr=1e-3)  # expect: GG007 head.log_temp
    except ValueError as err:
        assert "non-leaf" in str(err)
    else:
        raise AssertionError("the optimizer accepted a non-leaf tensor")


class ContrastiveHeadOk(nn.Module):
    def __init__(self, dim=16, dtype=torch.float64):
        super().__init__()
        self.proj = nn.Linear(dim, dim).to(dtype)
        self.log_temp = nn.Parameter(torch.zeros(1, dtype=dtype))

    def forward(self, a, b):
        za, zb = F.normalize(self.proj(a), dim=1), F.normalize(self.proj(b), dim=1)
        return za @ zb.t() * self.log_temp.exp()


def clean():
    torch.manual_seed(0)
    head = ContrastiveHeadOk()
    opt = torch.optim.AdamW(head.parameters(), lr=1e-3)
    a = torch.randn(8, 16, dtype=torch.float64)
    for _ in range(2):
        opt.zero_grad()
        logits = head(a, a + 0.1 * torch.randn_like(a))
        F.cross_entropy(logits, torch.arange(8)).backward()
        opt.step()
    assert head.log_temp.grad is not None
