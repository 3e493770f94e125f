import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class CLIP(nn.Module):
    def __init__(self, embed_dim=16, image_dim=24, vocab_size=50, context_length=6):
        super().__init__()
        self.visual = nn.Sequential(nn.Linear(image_dim, 32), nn.GELU(), nn.Linear(32, embed_dim))
        self.token_embedding = nn.Embedding(vocab_size, 32)
        self.positional_embedding = nn.Parameter(torch.empty(context_length, 32).normal_(std=0.01))
        self.ln_final = nn.LayerNorm(32)
        self.text_projection = nn.Parameter(torch.empty(32, embed_dim).normal_(std=32 ** -0.5))
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))

    def encode_image(self, image, normalize=False):
        features = self.visual(image)
        return F.normalize(features, dim=-1) if normalize else features

    def encode_text(self, text, normalize=False):
        x = self.token_embedding(text) + self.positional_embedding
        x = self.ln_final(x)
        x = x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection
        return F.normalize(x, dim=-1) if normalize else x

    def forward(self, image, text):
        image_features = self.encode_image(image, normalize=True)
        text_features = self.encode_text(text, normalize=True)
        return image_features, text_features, self.logit_scale.exp()


class ClipLoss(nn.Module):
    def forward(self, image_features, text_features, logit_scale):
        logits_per_image = logit_scale * image_features @ text_features.T
        logits_per_text = logit_scale * text_features @ image_features.T
        labels = torch.arange(logits_per_image.shape[0], device=image_features.device, dtype=torch.long)
        return (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2


def unwrap_model(model):
    return model.module if hasattr(model, 'module') else model


torch.manual_seed(0)
model = CLIP()
exclude = lambda n, p: p.ndim < 2 or "bn" in n or "ln" in n or "bias" in n or 'logit_scale' in n
include = lambda n, p: not exclude(n, p)
named_parameters = list(model.named_parameters())
gain_or_bias_params = [p for n, p in named_parameters if exclude(n, p) and p.requires_grad]
rest_params = [p for n, p in named_parameters if include(n, p) and p.requires_grad]
optimizer = torch.optim.AdamW(
    [{"params": gain_or_bias_params, "weight_decay": 0.},
     {"params": rest_params, "weight_decay": 0.2}],
    lr=5e-4, betas=(0.9, 0.98), eps=1e-6)
loss = ClipLoss()

for i in range(12):
    images = torch.randn(8, 24)
    texts = torch.randint(1, 50, (8, 6))
    optimizer.zero_grad()
    image_features, text_features, logit_scale = model(images, texts)
    total_loss = loss(image_features, text_features, logit_scale)
    total_loss.backward()
    optimizer.step()

    # Note: we clamp to 4.6052 = ln(100), as in the original paper.
    with torch.no_grad():
        unwrap_model(model).logit_scale.clamp_(0, math.log(100))
    if i % 4 == 0:
        print(i, total_loss.item(), logit_scale.item())
