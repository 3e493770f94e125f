# plain-torch: runs
"""GG013: binarized weights through sign(): the latent weight's gradient is zero every step."""
import torch
import torch.nn.functional as F


def run(ste):
    torch.manual_seed(0)
    w = torch.randn(5, 3, requires_grad=True)
    b = torch.zeros(3, requires_grad=True)
    opt = torch.optim.Adam([w, b], lr=0.01)
    x, y = torch.randn(20, 5), torch.randn(20, 3)
    for _ in range(3):
        wb = w.sign() if not ste else w + (w.sign() - w).detach()
        loss = F.mse_loss(x @ wb + b, y)
        opt.zero_grad()
        loss.backward()
        opt.step()  # expect: GG013 w
    return w


def buggy():
    w = run(False)
    assert not w.grad.any()


def clean():
    run(True)
