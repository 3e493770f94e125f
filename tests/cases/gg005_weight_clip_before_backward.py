# plain-torch: raises "modified by an inplace operation"
"""GG005: WGAN critic weights clipped between the critic's forward and its backward."""
import torch
import torch.nn as nn


def setup():
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.RMSprop(critic.parameters(), lr=5e-5)
    return critic, opt


def buggy():
    critic, opt = setup()
    real, fake = torch.randn(8, 3), torch.randn(8, 3)
    loss = critic(fake).mean() - critic(real).mean()
    opt.zero_grad()
    for p in critic.parameters():
        with torch.no_grad():
            p.clamp_(-0.01, 0.01)  # expect: GG005 critic[2].weight
    loss.backward()
    opt.step()


def clean():
    critic, opt = setup()
    for _ in range(3):
        real, fake = torch.randn(8, 3), torch.randn(8, 3)
        loss = critic(fake).mean() - critic(real).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        for p in critic.parameters():  # clip after the step: the next forward sees the clipped weights
            p.data.clamp_(-0.01, 0.01)
