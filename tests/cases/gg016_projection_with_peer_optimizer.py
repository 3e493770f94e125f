# plain-torch: runs
"""GG016: a generator weight projected through .data after its own step, with the critic's
optimizer stepping in between: judged at the generator's next step (reported); the critic's
weights clipped through a put-back copy before the critic's step stay quiet."""
import torch
import torch.nn as nn


def data(n=5):
    g = torch.Generator().manual_seed(11)
    for _ in range(n):
        yield torch.randn(8, 3, generator=g), torch.randn(8, 4, generator=g)


def buggy():
    torch.manual_seed(0)
    gen, critic = nn.Linear(3, 4), nn.Linear(4, 1)
    opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
    opt_c = torch.optim.SGD(critic.parameters(), lr=0.1)
    for z, real in data():
        opt_g.zero_grad()
        (-critic(gen(z)).mean()).backward()
        opt_g.step()
        w = gen.weight
        w.data = w.data / w.data.norm()  # expect: GG016 w
        opt_c.zero_grad()
        (critic(gen(z).detach()).mean() - critic(real).mean()).backward()
        opt_c.step()
    assert torch.allclose(gen.weight.norm(), torch.tensor(1.0))  # its norm never learned


def clean():
    torch.manual_seed(0)
    gen, critic = nn.Linear(3, 4), nn.Linear(4, 1)
    opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
    opt_c = torch.optim.SGD(critic.parameters(), lr=0.1)
    for z, real in data():
        opt_g.zero_grad()
        (-critic(gen(z)).mean()).backward()
        opt_g.step()
        keep = critic.weight.detach().clone()
        critic.weight.data = keep.clamp(-0.05, 0.05)  # score with the clipped critic
        opt_c.zero_grad()
        (critic(gen(z).detach()).mean() - critic(real).mean()).backward()
        critic.weight.data = keep  # the unclipped weights take the step
        opt_c.step()
    assert critic.weight.abs().max() > 0.05
