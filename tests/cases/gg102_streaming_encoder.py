# plain-torch: runs
"""GG102: a frozen streaming encoder whose state is carried across chunks, with retain_graph=True
so the second chunk does not crash; only the head is trained."""
import torch
import torch.nn as nn


def graph_size(t):
    seen, stack = set(), [t.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        stack.extend(f for f, _ in n.next_functions)
    return len(seen)


class StreamingClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.LSTMCell(4, 8)  # pretrained; not handed to the optimizer
        self.head = nn.Linear(8, 3)


def chunks(n=2):
    g = torch.Generator().manual_seed(11)
    for _ in range(n):
        yield torch.randn(2, 3, 4, generator=g), torch.randint(0, 3, (2,), generator=g)


def buggy():
    torch.manual_seed(0)
    model = StreamingClassifier()
    optimizer = torch.optim.SGD(model.head.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    h, c = torch.zeros(2, 8), torch.zeros(2, 8)
    sizes = []
    for x, y in chunks():
        for t in range(x.shape[1]):
            h, c = model.encoder(x[:, t], (h, c))
        loss = criterion(model.head(h), y)
        optimizer.zero_grad()
        loss.backward(retain_graph=True)  # expect: GG102 h, GG004 h
        optimizer.step()
        sizes.append(graph_size(loss))
    assert all(a < b for a, b in zip(sizes, sizes[1:]))  # every chunk re-runs all earlier ones


def clean():
    torch.manual_seed(0)
    model = StreamingClassifier()
    optimizer = torch.optim.SGD(model.head.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    h, c = torch.zeros(2, 8), torch.zeros(2, 8)
    for x, y in chunks():
        h, c = h.detach(), c.detach()
        for t in range(x.shape[1]):
            h, c = model.encoder(x[:, t], (h, c))
        loss = criterion(model.head(h), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
