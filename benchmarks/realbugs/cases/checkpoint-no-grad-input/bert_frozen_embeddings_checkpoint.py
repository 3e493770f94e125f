from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


@dataclass
class BertConfig:
    vocab_size: int = 100
    hidden_size: int = 32
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    intermediate_size: int = 64
    max_position_embeddings: int = 16


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1])
        return self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(positions))


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = nn.MultiheadAttention(config.hidden_size, config.num_attention_heads, batch_first=True)
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.output = nn.Linear(config.intermediate_size, config.hidden_size)
        self.norm1 = nn.LayerNorm(config.hidden_size)
        self.norm2 = nn.LayerNorm(config.hidden_size)

    def forward(self, hidden_states):
        attn, _ = self.attention(hidden_states, hidden_states, hidden_states)
        hidden_states = self.norm1(hidden_states + attn)
        return self.norm2(hidden_states + self.output(F.gelu(self.intermediate(hidden_states))))


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])
        self.gradient_checkpointing = False

    def forward(self, hidden_states):
        for layer_module in self.layer:
            if self.gradient_checkpointing and self.training:
                hidden_states = checkpoint(layer_module, hidden_states, use_reentrant=True)
            else:
                hidden_states = layer_module(hidden_states)
        return hidden_states


class BertModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)

    def gradient_checkpointing_enable(self):
        self.encoder.gradient_checkpointing = True

    def forward(self, input_ids):
        return self.encoder(self.embeddings(input_ids))


config = BertConfig()
model = BertModel(config)
for param in model.embeddings.parameters():
    param.requires_grad = False
model.gradient_checkpointing_enable()
model.train()

optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
teacher_states = torch.randn(4, 8, config.hidden_size)
for step in range(3):
    input_ids = torch.randint(0, config.vocab_size, (4, 8))
    last_hidden_state = model(input_ids)
    loss = F.mse_loss(last_hidden_state, teacher_states)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
