# plain-torch: runs
"""GG101: a dict of running sums for logging, where the loss entry keeps its graphs."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class AutoEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Linear(10, 3)
        self.dec = nn.Linear(3, 10)

    def forward(self, x):
        z = torch.tanh(self.enc(x))
        return self.dec(z), z


def data(n=5):
    g = torch.Generator().manual_seed(23)
    return [torch.randn(16, 10, generator=g) for _ in range(n)]


def train(detach: bool):
    torch.manual_seed(0)
    ae = AutoEncoder()
    opt = torch.optim.Adam(ae.parameters(), lr=1e-3)
    stats = {"loss": 0.0, "sparsity": 0.0, "steps": 0}
    for x in data():
        recon, z = ae(x)
        loss = F.mse_loss(recon, x) + 1e-3 * z.abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            stats["sparsity"] += (z.abs() < 0.1).float().mean()
        stats["loss"] += loss.detach() if detach else loss  # expect: GG101 stats['loss']
        stats["steps"] += 1
    return stats


def buggy():
    stats = train(detach=False)
    assert stats["loss"].grad_fn is not None  # the sum still drags five graphs along


def clean():
    stats = train(detach=True)
    assert stats["loss"].grad_fn is None
