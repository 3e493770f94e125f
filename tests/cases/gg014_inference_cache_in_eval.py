# plain-torch: raises "Inference tensors cannot be saved for backward"
"""GG014: a positional table cached on the module while evaluating under inference_mode, then
read by a training forward that must save it."""
import torch
import torch.nn as nn


class Scaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.table = None

    def forward(self, x):
        if self.table is None:
            self.table = torch.linspace(0.5, 1.5, 4).exp()
        return self.fc(x) * self.table  # expect: GG014 self.table


def run(evaluate_ctx):
    torch.manual_seed(0)
    model = Scaler()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with evaluate_ctx():
        model(torch.randn(2, 4))
    for _ in range(2):
        loss = model(torch.randn(2, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def buggy():
    run(torch.inference_mode)


def clean():
    run(torch.no_grad)  # no_grad tensors are ordinary tensors: training may save them
