# plain-torch: raises "backward through the graph a second time"
"""GG003: a decoder's outputs feed a reconstruction loss and, concatenated, a critic's loss; the
encoder's optimizer steps between the two backwards, which still share the decoder's graph (two
losses of one batch, not a state carried into the next)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def train(fused: bool, steps=3):
    torch.manual_seed(0)
    enc, dec, readout, critic = nn.Linear(4, 4), nn.GRUCell(8, 4), nn.Linear(4, 4), nn.Linear(4, 2)
    opt_enc = torch.optim.Adam(enc.parameters(), lr=1e-3)
    opt_rest = torch.optim.Adam([*dec.parameters(), *readout.parameters(), *critic.parameters()], lr=1e-3)
    for _ in range(steps):
        x = torch.randn(5, 4)
        h = torch.tanh(enc(x))
        outputs = F.softmax(h, dim=1).unsqueeze(1)
        rec_loss = 0
        for t in range(3):
            h = dec(torch.zeros(5, 8), h)
            logits = readout(h)
            rec_loss = rec_loss + F.cross_entropy(logits, x.argmax(1))
            outputs = torch.cat([outputs, F.softmax(logits / 0.1, dim=1).unsqueeze(1)], dim=1)
        critic_loss = F.cross_entropy(critic(outputs.mean(1)), torch.zeros(5, dtype=torch.long))
        opt_enc.zero_grad()
        opt_rest.zero_grad()
        if fused:
            (rec_loss + critic_loss).backward()
            opt_enc.step()
        else:
            rec_loss.backward()
            opt_enc.step()
            critic_loss.backward()  # expect: GG003 logits
        opt_rest.step()


def buggy():
    train(fused=False)


def clean():
    train(fused=True)
