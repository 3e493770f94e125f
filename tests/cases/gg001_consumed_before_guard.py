# plain-torch: raises "backward through the graph a second time"
"""GG001: features computed once from a trainable encoder get a sanity-check backward at import
time (as a notebook cell run before the guard would), which frees their graph; the guarded loop
then trains a head on them and its backward runs into the freed part. No guarded backward saw
the first one, so the guard finds the freed nodes by reading their saved values."""
import torch
import torch.nn as nn

torch.manual_seed(0)
encoder = nn.Linear(4, 4)
data = torch.randn(8, 4)
features = torch.tanh(encoder(data))  # computed once, with history
features.pow(2).mean().backward()  # a check before training: frees the graph behind `features`


def train(fresh: bool):
    head = nn.Linear(4, 1)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    for _ in range(2):
        feats = torch.tanh(encoder(data)) if fresh else features
        loss = head(feats).pow(2).mean()
        opt.zero_grad()
        loss.backward()  # expect: GG001 features
        opt.step()


def buggy():
    train(fresh=False)


def clean():
    train(fresh=True)
