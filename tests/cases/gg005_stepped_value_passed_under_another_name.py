# plain-torch: raises "modified by an inplace operation"
"""GG005: a baseline's helper steps its optimizer and returns the advantage with its graph; the
policy update receives it under its own parameter name (`adv`). The finding names the tensor as
the line that made it writes it (`advantage`), not as the callee's parameter."""
import torch
import torch.nn as nn


class Baseline:
    def __init__(self):
        self.net = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.05)

    def update(self, obs, ret):
        advantage = ret - self.net(obs).squeeze(1)
        self.opt.zero_grad()
        (advantage ** 2).mean().backward(retain_graph=True)
        self.opt.step()  # expect: GG005 advantage
        return advantage


class Policy:
    def __init__(self):
        self.logits = nn.Linear(3, 2)
        self.opt = torch.optim.SGD(self.logits.parameters(), lr=0.05)

    def update(self, obs, actions, adv, detach):
        logp = torch.log_softmax(self.logits(obs), dim=1).gather(1, actions[:, None]).squeeze(1)
        loss = -(logp * (adv.detach() if detach else adv)).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()


def run(detach, steps):
    torch.manual_seed(0)
    baseline, policy = Baseline(), Policy()
    for _ in range(steps):
        obs, ret = torch.randn(16, 3), torch.randn(16)
        actions = torch.randint(0, 2, (16,))
        advantage = baseline.update(obs, ret)
        policy.update(obs, actions, advantage, detach)


def buggy():
    run(detach=False, steps=1)


def clean():
    run(detach=True, steps=3)
