# plain-torch: runs
"""GG002: prediction and labels swapped in a BCE loss; a target network's output in a TD target."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    disc = nn.Sequential(nn.Linear(5, 1), nn.Sigmoid())
    online, target_net = nn.Linear(5, 2), nn.Linear(5, 2)
    params = list(disc.parameters()) + list(online.parameters())
    return disc, online, target_net, torch.optim.Adam(params, lr=1e-3)


def data():
    g = torch.Generator().manual_seed(8)
    return (torch.randn(6, 5, generator=g), torch.rand(6, 1, generator=g).round(),
            torch.randn(6, generator=g), torch.randn(6, 5, generator=g))


def buggy():
    disc, online, target_net, opt = setup()
    x, labels, reward, x_next = data()
    scores = disc(x)
    loss = F.binary_cross_entropy(labels, scores)  # expect: GG002 scores
    bootstrap = target_net(x_next).amax(1)
    td_target = reward + 0.9 * bootstrap
    loss = loss + F.smooth_l1_loss(online(x).amax(1), td_target)  # expect: GG002 bootstrap
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert target_net.weight.grad is not None


def clean():
    disc, online, target_net, opt = setup()
    x, labels, reward, x_next = data()
    loss = F.binary_cross_entropy(disc(x), labels)
    with torch.no_grad():
        td_target = reward + 0.9 * target_net(x_next).amax(1)
    loss = loss + F.smooth_l1_loss(online(x).amax(1), td_target)
    # VQ-VAE commitment loss: the input is a detach() of a graph tensor, on purpose
    z = online(x)
    loss = loss + F.mse_loss(z.detach(), z * 0.5)
    opt.zero_grad()
    loss.backward()
    opt.step()
