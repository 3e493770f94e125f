import torch
import torch.nn as nn
import torch.nn.functional as F


def get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError("activation must be relu/gelu, not {}".format(activation))


class MCLM(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=32, dropout=0.1, activation="relu"):
        super().__init__()
        self.attention = nn.MultiheadAttention(d_model, nhead)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.activation = get_activation_fn(activation)

    def forward(self, l, g):
        l2 = self.attention(l, g, g)[0]
        l = l + self.dropout1(l2)
        l = self.norm1(l)
        l2 = self.linear2(self.dropout(self.activation(self.linear1(l))))
        l = l + self.dropout2(l2)
        l = self.norm2(l)
        return l


class MVANet(nn.Module):
    def __init__(self, emb_dim=16):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, emb_dim, 4, stride=4)
        self.mclm = MCLM(emb_dim, 2)
        self.insmask_head = nn.Sequential(
            nn.Conv2d(emb_dim, emb_dim, 3, padding=1),
            nn.BatchNorm2d(emb_dim),
            nn.ReLU(),
            nn.Conv2d(emb_dim, 1, 1),
        )
        for m in self.modules():
            if isinstance(m, nn.ReLU) or isinstance(m, nn.Dropout):
                m.inplace = True

    def forward(self, x):
        feat = self.patch_embed(x)
        b, c, h, w = feat.shape
        glb = F.adaptive_avg_pool2d(feat, 2).flatten(2).permute(2, 0, 1)
        loc = feat.flatten(2).permute(2, 0, 1)
        loc = self.mclm(loc, glb)
        loc = loc.permute(1, 2, 0).reshape(b, c, h, w)
        out = self.insmask_head(loc)
        return F.interpolate(out, size=x.shape[2:], mode="bilinear", align_corners=False)
