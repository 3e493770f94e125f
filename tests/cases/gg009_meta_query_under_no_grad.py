# plain-torch: raises "does not require grad"
"""GG009: a meta-learning step adapts the weights per task with `torch.autograd.grad` (each call
frees its graph, so before the first optimizer step each one ends an iteration of the guard),
then evaluates the query loss under `torch.no_grad()`; the meta loss has no history. Found
after more tasks than the guard's fully recorded iterations: recording goes on until the
first step. The `autograd.grad` cut is not the culprit (`p - lr * g` keeps p's history): the
no_grad block is, and the query loss it hands out is named."""
import contextlib

import torch
import torch.nn.functional as F


def forward(x, weights):
    return F.linear(torch.tanh(F.linear(x, weights[0], weights[1])), weights[2], weights[3])


def meta_train(query_grad: bool):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(8, 3) * 0.3), torch.nn.Parameter(torch.zeros(8)),
              torch.nn.Parameter(torch.randn(1, 8) * 0.3), torch.nn.Parameter(torch.zeros(1))]
    opt = torch.optim.SGD(params, lr=0.01)
    for _ in range(2):
        query_losses = []
        for task in range(5):
            xs, ys, xq, yq = torch.randn(6, 3), torch.randn(6, 1), torch.randn(6, 3), torch.randn(6, 1)
            support = F.mse_loss(forward(xs, params), ys)
            grads = torch.autograd.grad(support, params, create_graph=query_grad)
            adapted = [p - 0.1 * g for p, g in zip(params, grads)]
            with contextlib.nullcontext() if query_grad else torch.no_grad():
                query_loss = F.mse_loss(forward(xq, adapted), yq)
            query_losses.append(query_loss)
        meta_loss = torch.stack(query_losses).mean()
        opt.zero_grad()
        meta_loss.backward()  # expect: GG009 query_loss, GG014 meta_loss
        opt.step()


def buggy():
    meta_train(query_grad=False)


def clean():
    meta_train(query_grad=True)
