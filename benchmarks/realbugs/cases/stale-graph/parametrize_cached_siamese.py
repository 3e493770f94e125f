import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize

torch.manual_seed(0)


class Orthogonal(nn.Module):
    def forward(self, X):
        A = X.triu(1)
        return torch.matrix_exp(A - A.transpose(-1, -2))


class SiameseNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.branch = nn.Linear(8, 8)
        parametrize.register_parametrization(self.branch, "weight", Orthogonal())
        self.head = nn.Linear(8, 1)

    def forward(self, img0, img1, solver_num_iters=2):
        f0 = self.branch(img0)
        f1 = self.branch(img1)
        for _ in range(solver_num_iters):
            f0 = torch.tanh(self.branch(f0))
        return self.head(torch.abs(f0 - f1))


class Module:
    def __init__(self):
        self.model = SiameseNet()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)

    def training_step(self, batch, solver_num_iters=2):
        img0, img1, label = batch
        pred = self.model.forward(img0, img1, solver_num_iters=solver_num_iters)
        loss = F.binary_cross_entropy_with_logits(pred.squeeze(1), label)
        return loss

    def fit(self, batches):
        with parametrize.cached():
            for batch in batches:
                self.optimizer.zero_grad()
                loss = self.training_step(batch)
                loss.backward()
                self.optimizer.step()


batches = [(torch.randn(4, 8), torch.randn(4, 8), torch.randint(0, 2, (4,)).float()) for _ in range(3)]
module = Module()
module.fit(batches)
