# plain-torch: runs
"""GG010: a classifier trained with SGD and momentum, zero_grad() forgotten."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def loader(n=6):
    g = torch.Generator().manual_seed(3)
    for _ in range(n):
        x = torch.randn(16, 10, generator=g)
        yield x, (x[:, 0] > 0).long() + (x[:, 1] > 0).long()


def train(zero: str | None, accumulate: int = 1):
    torch.manual_seed(0)
    model = Classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for i, (x, y) in enumerate(loader()):
        if zero == "set_to_none":
            opt.zero_grad()
        elif zero == "in_place":
            opt.zero_grad(set_to_none=False)
        elif zero == "model":
            model.zero_grad()
        loss = F.cross_entropy(model(x), y)
        (loss / accumulate).backward()
        if (i + 1) % accumulate == 0:
            opt.step()
            if zero == "after_step":
                for p in model.parameters():
                    p.grad = None
    return model.fc2.weight.detach().clone()


def buggy():
    torch.manual_seed(0)
    model = Classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for x, y in loader():
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()  # expect: GG010 opt
    # the silent damage: every step used the sum of all gradients so far
    assert not torch.allclose(model.fc2.weight, train("set_to_none"))


def clean():
    reference = train("set_to_none")
    assert torch.allclose(train("in_place"), reference)
    assert torch.allclose(train("model"), reference)
    train("after_step", accumulate=2)  # gradient accumulation: two backwards per step, then zero
