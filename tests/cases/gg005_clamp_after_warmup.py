# plain-torch: raises "modified by an inplace operation"
"""GG005: probabilities clamped in place once warm-up is over (the guard is in its light mode by
then, so the finding points at the backward and names the saving op by its node)."""
import torch
import torch.nn as nn


def train(clamp_in_place):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 6), torch.randint(0, 4, (32,))
    for step in range(5):
        probs = torch.softmax(model(x), dim=1)
        if step >= 3:  # after warm-up, guard against log(0)
            if clamp_in_place:
                probs.clamp_(min=1e-4)
            else:
                probs = probs.clamp(min=1e-4)
        loss = -probs.gather(1, y[:, None]).log().mean()
        opt.zero_grad()
        loss.backward()  # expect: GG005 probs
        opt.step()


def buggy():
    train(clamp_in_place=True)


def clean():
    train(clamp_in_place=False)
