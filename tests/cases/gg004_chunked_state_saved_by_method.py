# plain-torch: raises "backward through the graph a second time"
"""GG004: truncated BPTT over chunks of one sequence, one backward per chunk and one optimizer step
per sequence. The two RNNCell states live on a plain object, written by its own method from a
stack made after the chunk's last output, so the chunk's backward never runs the stack: the next
chunk unbinds it and backpropagates into the freed chunk before it."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class StreamState:
    def __init__(self, batch, width):
        self.layers = torch.zeros(2, batch, width)

    def save(self, layers):
        self.layers = layers

    def cut(self, detach):
        if detach:
            self.layers = self.layers.detach()


class TwoLayerReader(nn.Module):
    def __init__(self, n_in, width, n_out):
        super().__init__()
        self.lower = nn.RNNCell(n_in, width)
        self.upper = nn.RNNCell(width, width)
        self.head = nn.Linear(width, n_out)

    def forward(self, chunk, state):
        h1, h2 = state.layers.unbind(0)
        outs = []
        for x in chunk:
            h1 = self.lower(x, h1)
            h2 = self.upper(h1, h2)
            outs.append(self.head(h2))
        state.save(torch.stack([h1, h2]))
        return torch.stack(outs)


def train(detach):
    torch.manual_seed(0)
    model = TwoLayerReader(3, 8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for seq in range(2):
        xs, ys = torch.randn(12, 4, 3), torch.randn(12, 4, 2)
        state = StreamState(4, 8)
        opt.zero_grad()
        for start in range(0, 12, 4):
            pred = model(xs[start:start + 4], state)
            loss = F.mse_loss(pred, ys[start:start + 4])
            loss.backward()  # expect: GG004 self.layers
            state.cut(detach)
        opt.step()


def accumulate(micro):
    """Gradient accumulation over chunks: every chunk starts from a fresh state."""
    torch.manual_seed(1)
    model = TwoLayerReader(3, 8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for seq in range(2):
        opt.zero_grad()
        for _ in range(micro):
            xs, ys = torch.randn(4, 4, 3), torch.randn(4, 4, 2)
            loss = F.mse_loss(model(xs, StreamState(4, 8)), ys) / micro
            loss.backward()
        opt.step()


def buggy():
    train(detach=False)


def clean():
    train(detach=True)
    accumulate(micro=3)
