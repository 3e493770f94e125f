# plain-torch: runs
"""GG009 names the tensor where the history was dropped, as written there: the target of a
multi-line argmax statement, the helper that returns a fresh tensor, the value a helper re-wraps
with `requires_grad = True`. Clean: .item() for logging, a REINFORCE baseline under no_grad, a
straight-through estimator, a detached constant term."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    net = nn.Linear(4, 4)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    return net, opt, torch.randn(6, 4), torch.randn(6, 2)


def penalty(out):
    return torch.zeros(())


def objective(pred, y):
    value = F.mse_loss(pred, y).detach()
    value.requires_grad = True
    return value


def argmax_loss():
    net, opt, x, y = setup()
    logits = net(x)
    picked = torch.stack([
        logits[:, :2].argmax(dim=1),
        logits[:, 2:].argmax(dim=1)], dim=1).float()
    loss = F.mse_loss(picked, y)
    opt.zero_grad()
    loss.backward()  # expect: GG009 picked


def fresh_from_helper():
    net, opt, x, y = setup()
    reg = penalty(net(x))
    opt.zero_grad()
    reg.backward()  # expect: GG009 penalty


def rewrapped_in_helper():
    net, opt, x, y = setup()
    loss = objective(net(x)[:, :2], y)
    opt.zero_grad()
    loss.backward()  # expect: GG009 value
    return net  # net.weight.grad stays None (not read here: a read of it is GG008's business)


def buggy():
    rewrapped_in_helper()
    for crashes in (fresh_from_helper, argmax_loss):
        try:
            crashes()
        except RuntimeError:  # plain PyTorch: backward on a tensor with no grad_fn
            pass


def clean():
    net, opt, x, y = setup()
    critic = nn.Linear(4, 1)
    for _ in range(2):
        out = net(x)
        loss = F.mse_loss(out[:, :2], y)
        print(f"loss {loss.item():.3f}")  # .item() only for logging
        # REINFORCE: the baseline under no_grad, the advantage a constant
        logp = torch.log_softmax(out, dim=1)[:, 0]
        with torch.no_grad():
            baseline = critic(x).squeeze(1)
        advantage = y[:, 0] - baseline
        pg = -(logp * advantage).mean()
        # straight-through estimator: the rounded value forward, the identity backward
        q = out + (out.round() - out).detach()
        ste = q.pow(2).mean()
        # a constant term: a detached statistic of the output
        total = loss + pg + ste + out.detach().mean()
        opt.zero_grad()
        total.backward()
        opt.step()
