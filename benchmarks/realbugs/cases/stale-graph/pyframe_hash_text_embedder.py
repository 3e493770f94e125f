from typing import List, Optional

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import Embedding

torch.manual_seed(0)


class HashTextEmbedder:
    def __init__(self, out_channels: int, num_hash_bins: int = 64,
                 device: Optional[torch.device] = None):
        self.out_channels = out_channels
        self.num_hash_bins = num_hash_bins
        self.device = device
        self.embedding = Embedding(num_hash_bins, out_channels).to(device)

    def __call__(self, sentences: List[str]) -> Tensor:
        idx = torch.tensor(
            [sum(map(ord, s)) % self.num_hash_bins for s in sentences],
            dtype=torch.long, device=self.device)
        return self.embedding(idx)


class TextTableModel(torch.nn.Module):
    def __init__(self, num_cols, text_channels, hidden, out_channels):
        super().__init__()
        self.lin_num = torch.nn.Linear(num_cols, hidden)
        self.lin_text = torch.nn.Linear(text_channels, hidden)
        self.head = torch.nn.Linear(hidden, out_channels)

    def forward(self, x_num, x_text):
        h = torch.relu(self.lin_num(x_num) + self.lin_text(x_text))
        return self.head(h)


sentences = ["row %d says %s" % (i, w) for i, w in
             enumerate(["red", "green", "blue", "cyan"] * 16)]
text_embedder = HashTextEmbedder(out_channels=8, num_hash_bins=16)
feat_text = text_embedder(sentences)
feat_num = torch.randn(len(sentences), 4)
y = torch.randint(0, 3, (len(sentences),))

model = TextTableModel(num_cols=4, text_channels=8, hidden=16, out_channels=3)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(3):
    for start in range(0, len(sentences), 16):
        batch = slice(start, start + 16)
        optimizer.zero_grad()
        out = model(feat_num[batch], feat_text[batch])
        loss = F.cross_entropy(out, y[batch])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
