# plain-torch: runs
"""GG101: the epoch's loss summed with its graphs (`total_loss += loss`) for the progress print."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def graph_size(t):
    seen, stack = set(), [t.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        stack.extend(f for f, _ in n.next_functions)
    return len(seen)


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).flatten(1))


def loader(n):
    g = torch.Generator().manual_seed(21)
    for _ in range(n):
        yield torch.randn(8, 1, 8, 8, generator=g), torch.randint(0, 10, (8,), generator=g)


def buggy():
    torch.manual_seed(0)
    model = ConvNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    sizes = []
    for epoch in range(2):
        total_loss = 0
        for images, labels in loader(5):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            total_loss += loss  # expect: GG101 total_loss
            sizes.append(graph_size(total_loss))
        print(f"epoch {epoch}: {total_loss.item() / 5:.3f}")
    assert all(a < b for a, b in zip(sizes[:4], sizes[1:5]))  # every batch's graph stays alive


def clean():
    torch.manual_seed(0)
    model = ConvNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        total_loss = 0.0
        running = torch.zeros(())
        last_loss = None
        for images, labels in loader(5):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
            running += loss.detach()
            last_loss = loss  # kept for one iteration only: not a pile
        print(f"epoch {epoch}: {total_loss / 5:.3f} {float(running):.3f} {float(last_loss):.3f}")
