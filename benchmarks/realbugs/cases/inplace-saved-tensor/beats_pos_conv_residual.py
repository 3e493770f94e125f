import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class SamePad(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.remove = 1 if kernel_size % 2 == 0 else 0

    def forward(self, x):
        if self.remove > 0:
            x = x[:, :, :-self.remove]
        return x


class TransformerEncoder(nn.Module):
    def __init__(self, embedding_dim=32, conv_pos=8, conv_pos_groups=4, dropout=0.1):
        super().__init__()
        self.dropout = dropout
        self.embedding_dim = embedding_dim
        self.pos_conv = nn.Conv1d(embedding_dim, embedding_dim, kernel_size=conv_pos,
                                  padding=conv_pos // 2, groups=conv_pos_groups)
        self.pos_conv = nn.Sequential(self.pos_conv, SamePad(conv_pos), nn.GELU())
        self.layer_norm_first = False
        self.layer_norm = nn.LayerNorm(embedding_dim)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(embedding_dim, 4, 64, dropout, batch_first=False) for _ in range(2))

    def forward(self, x, padding_mask=None):
        x = self.extract_features(x, padding_mask)
        if self.layer_norm_first:
            x = self.layer_norm(x)
        return x

    def extract_features(self, x, padding_mask=None):
        x_conv = self.pos_conv(x.transpose(1, 2))
        x_conv = x_conv.transpose(1, 2)
        x += x_conv

        if not self.layer_norm_first:
            x = self.layer_norm(x)

        x = F.dropout(x, p=self.dropout, training=self.training)
        x = x.transpose(0, 1)
        for layer in self.layers:
            x = layer(x)
        x = x.transpose(0, 1)
        return x


class BEATs(nn.Module):
    def __init__(self, embed=32, num_classes=5):
        super().__init__()
        self.patch_embedding = nn.Conv2d(1, embed, kernel_size=4, stride=4, bias=False)
        self.layer_norm = nn.LayerNorm(embed)
        self.post_extract_proj = nn.Linear(embed, embed)
        self.dropout_input = nn.Dropout(0.1)
        self.encoder = TransformerEncoder(embed)
        self.classifier = nn.Linear(embed, num_classes)

    def forward(self, fbank):
        features = self.patch_embedding(fbank.unsqueeze(1))
        features = features.reshape(features.shape[0], features.shape[1], -1).transpose(1, 2)
        features = self.layer_norm(features)
        features = self.post_extract_proj(features)
        x = self.dropout_input(features)
        x = self.encoder(x)
        return self.classifier(x.mean(dim=1))


model = BEATs()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
fbank = torch.randn(4, 32, 32)
labels = torch.randint(0, 5, (4,))

for step in range(3):
    logits = model(fbank)
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
