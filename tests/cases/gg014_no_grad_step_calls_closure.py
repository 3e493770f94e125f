# plain-torch: raises "element 0 of tensors does not require grad"
"""GG014: a hand-written optimizer's `@torch.no_grad()` step calls the loss function it is given,
so the forward inside it runs with grad mode off."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SignSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.01, grad_on=False):
        super().__init__(params, {"lr": lr})
        self.grad_on = grad_on

    @torch.no_grad()
    def step(self, loss_fn=None):
        loss = None
        if loss_fn is not None:
            if self.grad_on:
                with torch.enable_grad():
                    loss = loss_fn().detach()
            else:
                loss = loss_fn()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad.sign(), alpha=-group["lr"])
        return loss


def train(grad_on):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = SignSGD(net.parameters(), grad_on=grad_on)
    x, y = torch.randn(16, 3), torch.randn(16, 1)

    def loss_fn():
        opt.zero_grad()
        objective = F.mse_loss(net(x), y)
        objective.backward()  # expect: GG014 objective, GG009 objective
        return objective

    for _ in range(2):
        opt.step(loss_fn)


def buggy():
    train(grad_on=False)


def clean():
    train(grad_on=True)
