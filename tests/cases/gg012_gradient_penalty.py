# plain-torch: raises "grad can be implicitly created only for scalar outputs"
"""GG012: a WGAN-GP gradient penalty whose autograd.grad call forgets grad_outputs."""
import torch
import torch.nn as nn


def make_critic():
    return nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))


def buggy():
    torch.manual_seed(0)
    critic = make_critic()
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.5, 0.9))
    real, fake = torch.randn(16, 2), torch.randn(16, 2)
    eps = torch.rand(16, 1)
    interp = (eps * real + (1 - eps) * fake).requires_grad_(True)
    critic_interp = critic(interp)
    grads = torch.autograd.grad(critic_interp, interp, create_graph=True)[0]  # expect: GG012 critic_interp
    penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
    opt_c.zero_grad()
    loss.backward()
    opt_c.step()


def clean():
    torch.manual_seed(0)
    critic = make_critic()
    opt_c = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.5, 0.9))
    for _ in range(2):
        real, fake = torch.randn(16, 2), torch.randn(16, 2)
        eps = torch.rand(16, 1)
        interp = (eps * real + (1 - eps) * fake).requires_grad_(True)
        critic_interp = critic(interp)
        grads = torch.autograd.grad(critic_interp, interp, grad_outputs=torch.ones_like(critic_interp),
                                    create_graph=True)[0]
        penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean()
        loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
        opt_c.zero_grad()
        loss.backward()
        opt_c.step()
