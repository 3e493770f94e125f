import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)


class TransformerEncoderLayer(nn.Module):
    def __init__(self, embed_dim, heads, ffn_dim, dropout=0.1):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(embed_dim, heads, dropout=dropout, batch_first=True)
        self.self_attn_layer_norm = nn.LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, embed_dim)
        self.final_layer_norm = nn.LayerNorm(embed_dim)
        self.dropout = dropout

    def forward(self, x, encoder_padding_mask=None):
        residual = x
        x, _ = self.self_attn(x, x, x, key_padding_mask=encoder_padding_mask, need_weights=False)
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.self_attn_layer_norm(residual + x)
        residual = x
        x = F.relu(self.fc1(x))
        x = F.dropout(self.fc2(x), p=self.dropout, training=self.training)
        return self.final_layer_norm(residual + x)


class TransformerEncoder(nn.Module):
    """An encoder with LayerDrop (Fan et al., 2019): in training, each layer is skipped with
    probability encoder_layerdrop."""

    def __init__(self, vocab, embed_dim=16, layers=4, encoder_layerdrop=0.3):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, embed_dim, padding_idx=0)
        self.encoder_layerdrop = encoder_layerdrop
        self.layers = nn.ModuleList([TransformerEncoderLayer(embed_dim, 2, 32) for _ in range(layers)])
        self.layer_norm = nn.LayerNorm(embed_dim)

    def forward(self, src_tokens):
        x = self.embed_tokens(src_tokens)
        encoder_padding_mask = src_tokens.eq(0)
        for layer in self.layers:
            dropout_probability = torch.empty(1).uniform_()
            if not self.training or (dropout_probability > self.encoder_layerdrop):
                x = layer(x, encoder_padding_mask)
        return self.layer_norm(x)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = TransformerEncoder(60)
        self.classification_head = nn.Linear(16, 3)

    def forward(self, src_tokens):
        return self.classification_head(self.encoder(src_tokens)[:, 0])


model = Classifier()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for update in range(12):
    src_tokens = torch.randint(1, 60, (8, 10))
    src_tokens[:, -2:] = 0
    target = torch.randint(0, 3, (8,))
    model.train()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(src_tokens), target)
    loss.backward()
    optimizer.step()
    if update % 4 == 0:
        print(update, loss.item())
model.eval()
with torch.no_grad():
    print(model(torch.randint(1, 60, (2, 10))).shape)
