# plain-torch: runs
"""GG011: fine-tuning where the classifier head is replaced after the optimizer was built."""
import torch
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))  # expect: GG011 model.fc


def images(n=3):
    g = torch.Generator().manual_seed(13)
    for _ in range(n):
        yield torch.randn(4, 1, 8, 8, generator=g), torch.randint(0, 3, (4,), generator=g)


def buggy():
    torch.manual_seed(0)
    model = Backbone()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.fc = nn.Linear(16, 3)  # new task: 3 classes
    head = model.fc.weight.detach().clone()
    criterion = nn.CrossEntropyLoss()
    for x, y in images():
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    assert torch.equal(model.fc.weight, head)


def clean():
    torch.manual_seed(0)
    model = Backbone()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.fc = nn.Linear(16, 3)
    optimizer.add_param_group({"params": model.fc.parameters()})  # the fix
    criterion = nn.CrossEntropyLoss()
    for x, y in images():
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    # freezing by omission: the features still require grad but are left out on purpose
    frozen = Backbone()
    head_only = torch.optim.Adam(frozen.fc.parameters(), lr=1e-3)
    for x, y in images():
        head_only.zero_grad()
        criterion(frozen(x), y % 3).backward()
        head_only.step()
    # no optimizer at all: the update is written by hand
    manual = Backbone()
    for x, y in images(2):
        criterion(manual(x), y).backward()
        with torch.no_grad():
            for p in manual.parameters():
                p -= 0.01 * p.grad
                p.grad = None
