# plain-torch: raises "does not require grad and does not have a grad_fn"
"""GG014: an evaluation helper returns a dict of losses computed under `with torch.no_grad():`
and the loop backpropagates one entry; the finding names the variable the no-grad line
assigned (`metrics`), as written there."""
import torch
import torch.nn as nn


def evaluate(model, x, y):
    pred = model(x)
    return pred, {"mse": ((pred - y) ** 2).mean(), "mae": (pred - y).abs().mean()}


def buggy():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(5, 3), torch.randn(5, 1)
    with torch.no_grad():
        pred, metrics = evaluate(model, x, y)
        opt.zero_grad()
        metrics["mse"].backward()  # expect: GG014 metrics, GG009 metrics['mse']
        opt.step()


def clean():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(5, 3), torch.randn(5, 1)
        pred, metrics = evaluate(model, x, y)
        opt.zero_grad()
        metrics["mse"].backward()
        opt.step()
        with torch.no_grad():
            _, val = evaluate(model, x, y)
        assert not val["mae"].requires_grad
