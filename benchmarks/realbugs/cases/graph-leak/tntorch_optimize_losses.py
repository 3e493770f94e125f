from functools import reduce

import torch

torch.manual_seed(0)


class TTTensor:
    def __init__(self, shape, rank):
        ranks = [1] + [rank] * (len(shape) - 1) + [1]
        self.cores = [torch.randn(ranks[n], shape[n], ranks[n + 1], requires_grad=True) for n in range(len(shape))]
        self.Us = [None] * len(shape)

    def full(self):
        result = self.cores[0]
        for core in self.cores[1:]:
            result = torch.einsum('...r,rjs->...js', result, core)
        return result[0, ..., 0]


def optimize(tensors, loss_function, tol=1e-4, max_iter=10000, print_freq=500, verbose=True):
    if not isinstance(tensors, (list, tuple)):
        tensors = [tensors]
    parameters = []
    for t in tensors:
        parameters.extend([c for c in t.cores if c.requires_grad])
        parameters.extend([U for U in t.Us if U is not None and U.requires_grad])

    optimizer = torch.optim.Adam(parameters)
    losses = []
    converged = False
    iter = 0
    while True:
        optimizer.zero_grad()
        loss = loss_function(*tensors)
        if not isinstance(loss, (tuple, list)):
            loss = [loss]
        losses.append(reduce(lambda x, y: x + y, loss))
        if len(losses) >= 2:
            delta_loss = (losses[-1] - losses[-2])
        else:
            delta_loss = float('-inf')
        if iter >= 2 and tol is not None and (losses[-1] <= tol or -delta_loss / losses[-1] <= tol) and losses[-2] - \
                losses[-1] < losses[-3] - losses[-2]:
            converged = True
            break
        if iter == max_iter:
            break
        if verbose and iter % print_freq == 0:
            print('iter: {: <6} | loss: {:10.6f}'.format(iter, losses[-1].item()))
        losses[-1].backward()
        optimizer.step()
        iter += 1
    return losses


picture = torch.rand(6, 6, 6)
t = TTTensor(picture.shape, rank=3)


def loss_function(t):
    return torch.norm(t.full() - picture)


losses = optimize(t, loss_function, max_iter=12, print_freq=4)
