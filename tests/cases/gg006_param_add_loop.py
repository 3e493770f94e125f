# plain-torch: raises "a leaf Variable that requires grad is being used in an in-place operation"
"""GG006: a hand-written SGD step over model.parameters() with add_ outside torch.no_grad()."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def sgd_step(model, lr):
    for p in model.parameters():
        if p.grad is not None:
            p.add_(p.grad, alpha=-lr)  # expect: GG006 model.fc1.weight


def buggy():
    torch.manual_seed(0)
    model = TinyNet()
    batches = [(torch.randn(8, 10), torch.randint(0, 2, (8,))) for _ in range(3)]
    for x, y in batches:
        model.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        sgd_step(model, lr=0.05)


@torch.no_grad()
def sgd_step_ok(model, lr):
    for p in model.parameters():
        if p.grad is not None:
            p.add_(p.grad, alpha=-lr)


def clean():
    torch.manual_seed(0)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    batches = [(torch.randn(8, 10), torch.randint(0, 2, (8,))) for _ in range(3)]
    for x, y in batches:
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()
        sgd_step_ok(model, lr=0.05)
        opt.step()  # optimizer internals write into the parameters: not reported
        opt.zero_grad(set_to_none=False)
    nn.init.zeros_(model.fc2.bias)  # nn.init runs under no_grad
    with torch.no_grad():
        model.fc1.weight.clamp_(-1, 1)
