from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F


class DinoVisionTransformer(nn.Module):
    def __init__(self, embed_dim=16, depth=2, patch_size=4):
        super().__init__()
        self.patch_size = patch_size
        self.patch_embed = nn.Conv2d(3, embed_dim, patch_size, stride=patch_size)
        self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(embed_dim, 2, 32, dropout=0.0, batch_first=True)
                                     for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim)

    @torch.inference_mode()
    def get_intermediate_layers(self, x, n=1, reshape=False):
        B, _, H, W = x.shape
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        outputs = []
        for i, blk in enumerate(self.blocks):
            x = blk(x)
            if i >= len(self.blocks) - n:
                outputs.append(self.norm(x))
        if reshape:
            h, w = H // self.patch_size, W // self.patch_size
            outputs = [out.transpose(1, 2).reshape(B, -1, h, w) for out in outputs]
        return tuple(outputs)

    def forward(self, x):
        return self.norm(self.patch_embed(x).flatten(2).transpose(1, 2))


class BNHead(nn.Module):
    def __init__(self, in_channels, n_bins=1):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_channels)
        self.conv_depth = nn.Conv2d(in_channels, n_bins, 1)

    def _transform_inputs(self, inputs):
        if len(inputs) == 1:
            return inputs[0]
        return torch.cat(inputs, dim=1)

    def forward(self, inputs):
        x = self._transform_inputs(inputs)
        x = self.bn(x)
        return F.relu(self.conv_depth(x)) + 1e-3


class DepthEncoderDecoder(nn.Module):
    def __init__(self, backbone, decode_head):
        super().__init__()
        self.backbone = backbone
        self.decode_head = decode_head

    def forward(self, img, depth_gt=None, return_loss=True):
        x = self.backbone(img)
        depth_pred = self.decode_head(x)
        depth_pred = F.interpolate(depth_pred, size=img.shape[2:], mode="bilinear", align_corners=False)
        if return_loss:
            return {"loss_depth": F.l1_loss(depth_pred, depth_gt)}
        return depth_pred


def create_depther(backbone_model, n=1):
    head = BNHead(in_channels=backbone_model.norm.normalized_shape[0] * n)
    model = DepthEncoderDecoder(backbone=backbone_model, decode_head=head)
    model.backbone.forward = partial(backbone_model.get_intermediate_layers, n=n, reshape=True)
    return model


torch.manual_seed(0)
backbone_model = DinoVisionTransformer()
model = create_depther(backbone_model)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
images = torch.randn(2, 3, 16, 16)
depths = torch.rand(2, 1, 16, 16)
for it in range(2):
    losses = model(images, depth_gt=depths, return_loss=True)
    optimizer.zero_grad()
    losses["loss_depth"].backward()
    optimizer.step()
