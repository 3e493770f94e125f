# plain-torch: runs
"""GG009 (warning): a loss term computed through a hard op is added to a loss that trains. The
segmentation head's Dice term is built from `argmax`: the sum still has a gradient, from cross-entropy alone, so the Dice weight `lam`
changes the logged loss and nothing else (gg009_added_accuracy_term.py: a count of correct
predictions). Clean: a soft Dice on the softmax probabilities, a
detached statistic added on purpose, and an accuracy that is only logged."""
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


def hard_dice(logits, masks, classes=4):
    pred = logits.argmax(dim=1)
    pred_1h = F.one_hot(pred, classes).permute(0, 3, 1, 2).float()
    true_1h = F.one_hot(masks, classes).permute(0, 3, 1, 2).float()
    inter = (pred_1h * true_1h).sum()
    return 1 - 2 * inter / (pred_1h.sum() + true_1h.sum())


def soft_dice(logits, masks, classes=4):
    prob = logits.softmax(dim=1)
    true_1h = F.one_hot(masks, classes).permute(0, 3, 1, 2).float()
    inter = (prob * true_1h).sum()
    return 1 - 2 * inter / (prob.sum() + true_1h.sum())


def train(dice, steps=3, lam=0.5):
    seg_head, opt, images, masks = setup()
    for _ in range(steps):
        logits = seg_head(images)
        dice_loss = dice(logits, masks)
        loss = F.cross_entropy(logits, masks) + lam * dice_loss
        opt.zero_grad()
        loss.backward()  # expect: GG009 dice_loss
        opt.step()
    return dice_loss


def buggy():
    dice_loss = train(hard_dice)
    assert dice_loss.grad_fn is None  # the term never had a gradient to give


def clean():
    assert train(soft_dice).grad_fn is not None
    seg_head, opt, images, masks = setup()
    for _ in range(3):
        logits = seg_head(images)
        loss = F.cross_entropy(logits, masks)
        # a detached statistic added on purpose (the reported value includes it), and an
        # accuracy that is only logged
        reported = loss + 0.1 * logits.detach().abs().mean()
        acc = (logits.argmax(dim=1) == masks).float().mean()
        print(f"acc {acc.item():.2f} reported {reported.item():.3f}")
        opt.zero_grad()
        reported.backward()
        opt.step()
