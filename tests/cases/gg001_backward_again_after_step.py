# plain-torch: raises "backward through the graph a second time"
"""GG001: a graph backwarded, the optimizer stepped, then backwarded again from another line. The
step ends the iteration, so the second backward runs a graph of an earlier iteration (stale), not
a second loss of the same one (GG003): the whole loss again, or a forward output kept past the
step and fed to a new loss. Two losses built together, each followed by a step, stay GG003."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    enc, head = nn.Linear(4, 4), nn.Linear(4, 1)
    opt = torch.optim.SGD([*enc.parameters(), *head.parameters()], lr=0.1)
    return enc, head, opt, torch.randn(6, 4), torch.randn(6, 1)


def same_loss_twice():
    enc, head, opt, x, y = setup()
    err = F.mse_loss(head(torch.relu(enc(x))), y)
    err.backward()
    opt.step()
    opt.zero_grad()
    torch.autograd.backward(err)  # expect: GG001 err
    opt.step()


def features_kept_past_the_step():
    enc, head, opt, x, y = setup()
    feats = torch.relu(enc(x))
    first = F.mse_loss(head(feats), y)
    first.backward()
    opt.step()
    opt.zero_grad()
    second = head(feats).abs().mean()
    second.backward()  # expect: GG001 feats
    opt.step()


def buggy():
    try:
        same_loss_twice()
    except RuntimeError:
        pass
    features_kept_past_the_step()


def clean():
    enc, head, opt, x, y = setup()
    for _ in range(2):
        err = F.mse_loss(head(torch.relu(enc(x))), y)
        err.backward()
        opt.step()
        opt.zero_grad()
    feats = torch.relu(enc(x))
    first = F.mse_loss(head(feats), y)
    first.backward()
    opt.step()
    opt.zero_grad()
    feats = torch.relu(enc(x))  # the forward again, from the stepped weights
    second = head(feats).abs().mean()
    second.backward()
    opt.step()
