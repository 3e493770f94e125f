# plain-torch: runs
"""GG102: style transfer whose style target keeps the feature extractor's graph; the "second time"
error was silenced with retain_graph=True, so every step re-runs the target's graph."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def gram(features):
    b, c, h, w = features.shape
    f = features.view(b * c, h * w)
    return f @ f.t() / (b * c * h * w)


def extractor():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))


def buggy():
    vgg = extractor()
    style_image = torch.rand(1, 3, 16, 16)
    canvas = torch.rand(1, 3, 16, 16).requires_grad_(True)
    optimizer = torch.optim.Adam([canvas], lr=0.05)
    style_gram = gram(vgg(style_image))  # the style target, with vgg's history
    for step in range(3):
        optimizer.zero_grad()
        style_loss = F.mse_loss(gram(vgg(canvas)), style_gram)  # expect: GG002 style_gram
        style_loss.backward(retain_graph=True)  # expect: GG001 style_gram, GG102 style_gram
        optimizer.step()
    # the frozen extractor keeps receiving gradient from the target's graph, step after step
    assert vgg[0].weight.grad is not None


def clean():
    vgg = extractor()
    style_image = torch.rand(1, 3, 16, 16)
    canvas = torch.rand(1, 3, 16, 16).requires_grad_(True)
    optimizer = torch.optim.Adam([canvas], lr=0.05)
    style_gram = gram(vgg(style_image)).detach()
    for step in range(3):
        optimizer.zero_grad()
        style_loss = F.mse_loss(gram(vgg(canvas)), style_gram)
        style_loss.backward()
        optimizer.step()
