import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)




class MetaSGD(nn.Module):
    def __init__(self, model, lr=1.0, first_order=False, lrs=None):
        super(MetaSGD, self).__init__()
        self.module = model
        if lrs is None:
            lrs = [torch.ones_like(p) * lr for p in model.parameters()]
            lrs = nn.ParameterList([nn.Parameter(lr) for lr in lrs])
        self.lrs = lrs
        self.first_order = first_order
        self.fast_params = None

    def forward(self, x):
        if self.fast_params is None:
            return self.module(x)
        return torch.func.functional_call(self.module, self.fast_params, (x,))

    def clone(self):
        clone = MetaSGD(self.module, lrs=self.lrs, first_order=self.first_order)
        return clone

    def adapt(self, loss, first_order=None):
        if first_order is None:
            first_order = self.first_order
        second_order = not first_order
        params = list(self.module.parameters()) if self.fast_params is None else list(self.fast_params.values())
        gradients = torch.autograd.grad(loss, params, retain_graph=second_order, create_graph=second_order)
        names = [n for n, _ in self.module.named_parameters()]
        self.fast_params = {n: p - lr * g for n, p, lr, g in zip(names, params, self.lrs, gradients)}


def sine_task(n=10):
    amplitude = torch.rand(1) * 4.9 + 0.1
    phase = torch.rand(1) * math.pi
    x = torch.rand(2 * n, 1) * 10 - 5
    y = amplitude * torch.sin(x + phase)
    return (x[:n], y[:n]), (x[n:], y[n:])


model = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))
meta_model = MetaSGD(model, lr=0.01)
opt = torch.optim.Adam(meta_model.parameters(), lr=1e-3)

for iteration in range(6):
    opt.zero_grad()
    meta_train_loss = 0.0
    for task in range(4):
        (adapt_x, adapt_y), (eval_x, eval_y) = sine_task()
        learner = meta_model.clone()
        for step in range(2):
            learner.adapt(F.mse_loss(learner(adapt_x), adapt_y))
        evaluation_error = F.mse_loss(learner(eval_x), eval_y)
        evaluation_error.backward()
        meta_train_loss += evaluation_error.item()
    for p in meta_model.parameters():
        p.grad.data.mul_(1.0 / 4)
    opt.step()
    print(iteration, meta_train_loss / 4)
