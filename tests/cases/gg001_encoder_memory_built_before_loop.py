# plain-torch: raises "backward through the graph a second time"
"""GG001: a user module's output (its ops run inside `forward`) computed once at the top level of
a script (a notebook cell, a shape check before training) and read by every iteration's decoder.
The finding dates it by the top-level line that assigns the name (`memory = encoder(src)`), not
by the op inside `forward`. The script parts run as the file's own top level (runpy)."""
import runpy

import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 8)

    def forward(self, src):
        out, _ = self.rnn(src)
        return torch.tanh(out)


def setup():
    torch.manual_seed(0)
    encoder, decoder = Encoder(), nn.Linear(8, 1)
    params = list(encoder.parameters()) + list(decoder.parameters())
    return encoder, decoder, torch.optim.SGD(params, lr=0.1), torch.randn(5, 2, 4)


def train(decoder, opt):
    for step in range(3):
        opt.zero_grad()
        loss = decoder(memory).pow(2).mean()
        loss.backward()  # expect: GG001 memory
        opt.step()


if __name__ == "__buggy__":
    encoder, decoder, opt, src = setup()
    memory = encoder(src)
    train(decoder, opt)

if __name__ == "__clean__":
    encoder, decoder, opt, src = setup()
    for step in range(3):
        opt.zero_grad()
        memory = encoder(src)  # encoded again from the current weights
        loss = decoder(memory).pow(2).mean()
        loss.backward()
        opt.step()


def buggy():
    runpy.run_path(__file__, run_name="__buggy__")


def clean():
    runpy.run_path(__file__, run_name="__clean__")
