# plain-torch: raises "Trying to backward through the graph a second time"
"""GG001: a dataset tensor is preprocessed once by a trainable layer outside the loop and handed
to a trainer that keeps it as an attribute; each batch is indexed from it, so every loss hangs on
the preprocessing graph the first backward freed. The finding names the tensor as written where
it was made (`features`), not the attribute that holds it later (`self.data`)."""
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, data):
        self.model = model
        self.data = data
        self.opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def run(self, steps):
        for _ in range(steps):
            batch = self.data[torch.randint(0, self.data.shape[0], (4,))]
            loss = self.model(batch).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()  # expect: GG001 features
            self.opt.step()


def buggy():
    torch.manual_seed(0)
    embed = nn.Linear(5, 3)
    features = embed(torch.randn(20, 5))
    Trainer(nn.Linear(3, 1), features).run(3)


def clean():
    torch.manual_seed(0)
    embed = nn.Linear(5, 3)
    with torch.no_grad():
        features = embed(torch.randn(20, 5))
    Trainer(nn.Linear(3, 1), features).run(3)
