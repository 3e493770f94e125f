# plain-torch: raises "custom backward: gradient"
"""GG903: a custom Function's backward raises a RuntimeError no rule predicts: graphguard
explains it after the fact (before_crash false) instead of letting a bare error out."""
import torch


class Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clamp(-1, 1)

    @staticmethod
    def backward(ctx, g):
        if g.abs().max() > 0:
            raise RuntimeError("custom backward: gradient not supported here")
        return g


def buggy():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    out = Clip.apply(w * 2).sum()
    out.backward()  # expect: GG903 out
    opt.step()


def clean():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    out = (w * 2).clamp(-1, 1).sum()
    out.backward()
    print(w.grad)
