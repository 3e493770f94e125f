# plain-torch: raises "backward through the graph a second time"
"""GG004: a language model keeps its LSTM state on `self` between batches, never detached."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class CharLM(nn.Module):
    def __init__(self, vocab=12, hidden=16, detach_state=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, 8)
        self.lstm = nn.LSTM(8, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)
        self.state = None
        self.detach_state = detach_state

    def forward(self, tokens):
        if self.state is not None and self.detach_state:
            self.state = tuple(s.detach() for s in self.state)
        out, self.state = self.lstm(self.embed(tokens), self.state)
        return self.head(out)


def train(detach_state):
    torch.manual_seed(0)
    model = CharLM(detach_state=detach_state)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stream = torch.randint(0, 12, (2, 40))
    for i in range(0, 30, 10):
        x, y = stream[:, i:i + 10], stream[:, i + 1:i + 11]
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, 12), y.reshape(-1))
        opt.zero_grad()
        loss.backward()  # expect: GG004 self.state
        opt.step()


def buggy():
    train(detach_state=False)


def clean():
    train(detach_state=True)
