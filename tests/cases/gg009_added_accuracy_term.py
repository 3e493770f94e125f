# plain-torch: runs
"""GG009 (warning): an accuracy penalty `1 - acc` added to cross-entropy, where `acc` counts
argmax predictions equal to the labels: the count has no gradient, so the penalty only shifts
the loss. Clean: the same accuracy only logged, and a soft expected accuracy from the softmax."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def setup():
    torch.manual_seed(0)
    seg_head = nn.Conv2d(3, 4, 1)
    opt = torch.optim.Adam(seg_head.parameters(), lr=1e-2)
    images = torch.randn(2, 3, 8, 8)
    masks = torch.randint(0, 4, (2, 8, 8))
    return seg_head, opt, images, masks


def accuracy_penalty(steps=3):
    seg_head, opt, images, masks = setup()
    for _ in range(steps):
        logits = seg_head(images)
        acc = (logits.argmax(dim=1) == masks).float().mean()
        total = F.cross_entropy(logits, masks)
        total = total + (1 - acc)
        opt.zero_grad()
        total.backward()  # expect: GG009 acc
        opt.step()
    return acc


def buggy():
    acc = accuracy_penalty()
    assert not acc.requires_grad  # the penalty 1 - acc never had a gradient to give


def clean():
    seg_head, opt, images, masks = setup()
    for _ in range(3):
        logits = seg_head(images)
        acc = (logits.argmax(dim=1) == masks).float().mean()
        soft_acc = logits.softmax(dim=1).gather(1, masks.unsqueeze(1)).mean()
        total = F.cross_entropy(logits, masks) + (1 - soft_acc)
        print(f"acc {acc.item():.2f}")
        opt.zero_grad()
        total.backward()
        opt.step()
