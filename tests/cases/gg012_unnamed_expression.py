# plain-torch: raises "grad can be implicitly created only for scalar outputs"
"""GG012: backward straight from an unreduced expression, and through torch.autograd.backward."""
import torch


def buggy():
    torch.manual_seed(0)
    w = torch.zeros(3, requires_grad=True)
    x, y = torch.randn(10, 3), torch.randn(10)
    sgd = torch.optim.SGD([w], lr=0.1)
    sgd.zero_grad()
    ((x @ w - y) ** 2).backward()  # expect: GG012 -
    sgd.step()


def clean():
    torch.manual_seed(0)
    w = torch.zeros(3, requires_grad=True)
    x, y = torch.randn(10, 3), torch.randn(10)
    sgd = torch.optim.SGD([w], lr=0.1)
    for _ in range(2):
        sgd.zero_grad()
        ((x @ w - y) ** 2).mean().backward()
        sgd.step()
        residual = x @ w - y
        sgd.zero_grad()
        torch.autograd.backward([residual], [2 * residual.detach() / 10])  # explicit grad_tensors
        sgd.step()
        jac_row = torch.autograd.grad(x @ w - y, w, grad_outputs=torch.eye(10)[0])[0]
        assert jac_row.shape == (3,)
