import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Layer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, hidden_states):
        return hidden_states + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(hidden_states))))


class Encoder(nn.Module):
    def __init__(self, vocab=32, dim=16, num_layers=3):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Layer(dim) for _ in range(num_layers)])
        self.lm_head = nn.Linear(dim, vocab)
        self.gradient_checkpointing = True

    def forward(self, input_ids):
        hidden_states = self.embed_tokens(input_ids)
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                hidden_states = checkpoint(layer, hidden_states, use_reentrant=True)
            else:
                hidden_states = layer(hidden_states)
        return self.lm_head(hidden_states)


torch.manual_seed(0)
model = Encoder()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
input_ids = torch.randint(0, 32, (4, 12))
labels = torch.randint(0, 32, (4, 12))
model.train()
for step in range(4):
    logits = model(input_ids)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 32), labels.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
