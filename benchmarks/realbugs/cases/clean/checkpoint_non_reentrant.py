import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Dropout(0.1), nn.Linear(dim * 2, dim))

    def forward(self, x):
        return x + self.ff(self.norm(x))


class Model(nn.Module):
    def __init__(self, dim=16, depth=4, use_checkpoint=True):
        super().__init__()
        self.embed = nn.Embedding(20, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.tail = nn.Sequential(Block(dim), Block(dim))
        self.head = nn.Linear(dim, 20)
        self.use_checkpoint = use_checkpoint

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            if self.use_checkpoint and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        if self.training:
            x = checkpoint_sequential(self.tail, 2, x, use_reentrant=False)
        else:
            x = self.tail(x)
        return self.head(x)


torch.manual_seed(0)
model = Model()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
tokens = torch.randint(0, 20, (4, 10))
targets = torch.randint(0, 20, (4, 10))
model.train()
for step in range(4):
    optimizer.zero_grad()
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.view(-1, 20), targets.view(-1))
    loss.backward()
    optimizer.step()
    print(step, loss.item())
model.eval()
with torch.no_grad():
    print(model(tokens).argmax(-1)[0])
