import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Transformer(nn.Module):
    def __init__(self, dim, depth, mlp_dim):
        super().__init__()
        self.layers = nn.ModuleList([nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, mlp_dim), nn.GELU(),
                                                   nn.Linear(mlp_dim, dim)) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        for ff in self.layers:
            x = ff(x) + x
        return self.norm(x)


class ViTEncoder(nn.Module):
    def __init__(self, image_size, patch_size, dim, depth, mlp_dim, channels=3):
        super().__init__()
        self.num_patches = (image_size // patch_size) ** 2
        self.to_patch_embedding = nn.Conv2d(channels, dim, kernel_size=patch_size, stride=patch_size)
        self.en_pos_embedding = nn.Parameter(torch.randn(1, self.num_patches, dim))
        self.transformer = Transformer(dim, depth, mlp_dim)

    def forward(self, img):
        x = self.to_patch_embedding(img).flatten(2).transpose(1, 2)
        x = x + self.en_pos_embedding
        return self.transformer(x)


class ViTDecoder(nn.Module):
    def __init__(self, image_size, patch_size, dim, depth, mlp_dim, channels=3):
        super().__init__()
        self.num_patches = (image_size // patch_size) ** 2
        self.grid = image_size // patch_size
        self.transformer = Transformer(dim, depth, mlp_dim)
        self.de_pos_embedding = nn.Parameter(torch.randn(1, self.num_patches, dim))
        self.conv_out = nn.ConvTranspose2d(dim, channels, kernel_size=patch_size, stride=patch_size)

    def forward(self, token):
        token += self.de_pos_embedding
        x = self.transformer(token)
        b, n, c = x.shape
        x = x.transpose(1, 2).reshape(b, c, self.grid, self.grid)
        return self.conv_out(x)


class VectorQuantizer(nn.Module):
    def __init__(self, embed_dim, n_embed):
        super().__init__()
        self.embedding = nn.Embedding(n_embed, embed_dim)

    def forward(self, z):
        d = torch.cdist(z, self.embedding.weight.unsqueeze(0).expand(z.shape[0], -1, -1))
        z_q = self.embedding(d.argmin(-1))
        loss = F.mse_loss(z_q, z.detach()) + 0.25 * F.mse_loss(z_q.detach(), z)
        quant = z + (z_q - z).detach()
        return quant, loss


encoder_config = dict(image_size=16, patch_size=4, dim=16, depth=1, mlp_dim=32)
encoder = ViTEncoder(**encoder_config)
quantizer = VectorQuantizer(embed_dim=16, n_embed=32)
decoder_a = ViTDecoder(**encoder_config)
decoder_b = ViTDecoder(**encoder_config, channels=1)
params = list(encoder.parameters()) + list(quantizer.parameters()) + list(decoder_a.parameters()) + list(decoder_b.parameters())
optimizer = torch.optim.Adam(params, lr=1e-4)

for step in range(2):
    x = torch.randn(2, 3, 16, 16)
    edge = torch.randn(2, 1, 16, 16)
    quant, emb_loss = quantizer(encoder(x))
    rec_a = decoder_a(quant)
    rec_b = decoder_b(quant)
    loss = F.l1_loss(rec_a, x) + F.l1_loss(rec_b, edge) + emb_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
