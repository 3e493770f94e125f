# plain-torch: runs
"""GG010: gradient accumulation whose reset was lost; the legitimate variants stay quiet."""
import torch
import torch.nn as nn
import torch.nn.functional as F

ACCUM = 2


def micro_batches(n=8):
    g = torch.Generator().manual_seed(7)
    for _ in range(n):
        x = torch.randn(4, 5, generator=g)
        yield x, torch.tanh(x.sum(1, keepdim=True))


def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 12), nn.GELU(), nn.Linear(12, 1))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)


def accumulate(reset: bool):
    model, optimizer = make()
    for i, (x, y) in enumerate(micro_batches()):
        loss = F.mse_loss(model(x), y) / ACCUM
        loss.backward()
        if (i + 1) % ACCUM == 0:
            optimizer.step()  # expect: GG010 optimizer
            if reset:
                optimizer.zero_grad()
    return model[0].weight.detach().clone()


def buggy():
    assert not torch.allclose(accumulate(reset=False), accumulate(reset=True))


def clean():
    accumulate(reset=True)
    # zero at the start of each window instead of after the step
    model, optimizer = make()
    for i, (x, y) in enumerate(micro_batches()):
        if i % ACCUM == 0:
            optimizer.zero_grad(set_to_none=False)
        F.mse_loss(model(x), y).backward()
        if (i + 1) % ACCUM == 0:
            optimizer.step()
    # LBFGS: the closure zeroes and recomputes inside step()
    model, _ = make()
    lbfgs = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=3)
    for x, y in micro_batches(3):
        def closure():
            lbfgs.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            return loss
        lbfgs.step(closure)
    # WGAN-style weight clipping after each step: a no_grad write that is not an update from .grad
    model, optimizer = make()
    for x, y in micro_batches(4):
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
        for p in model.parameters():
            p.data.clamp_(-0.5, 0.5)
    # two losses, two backward calls, one step: accumulation inside one iteration
    model, optimizer = make()
    for x, y in micro_batches(4):
        optimizer.zero_grad()
        out = model(x)
        F.mse_loss(out, y).backward(retain_graph=True)
        (0.1 * out.abs().mean()).backward()
        optimizer.step()
