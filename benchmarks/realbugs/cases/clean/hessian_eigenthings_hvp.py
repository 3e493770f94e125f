import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class HVPOperator(object):
    """Hessian-vector products of the loss on a dataloader, by double backward."""

    def __init__(self, model, dataloader, criterion):
        self.size = int(sum(p.numel() for p in model.parameters()))
        self.model = model
        self.dataloader = dataloader
        self.criterion = criterion

    def apply(self, vec):
        n = len(self.dataloader)
        hessian_vec_prod = None
        for inputs, targets in self.dataloader:
            self.zero_grad()
            grad_vec = self.prepare_grad(inputs, targets)
            self.zero_grad()
            hessian_vec_prod_dict = torch.autograd.grad(grad_vec, self.model.parameters(),
                                                        grad_outputs=vec, only_inputs=True)
            part = torch.cat([g.contiguous().view(-1) for g in hessian_vec_prod_dict])
            hessian_vec_prod = part if hessian_vec_prod is None else hessian_vec_prod + part
        return hessian_vec_prod / n

    def zero_grad(self):
        for p in self.model.parameters():
            if p.grad is not None:
                p.grad.data.zero_()

    def prepare_grad(self, inputs, targets):
        output = self.model(inputs)
        loss = self.criterion(output, targets)
        grad_dict = torch.autograd.grad(loss, self.model.parameters(), create_graph=True)
        return torch.cat([g.contiguous().view(-1) for g in grad_dict])


def power_iteration(operator, steps=8):
    vec = torch.randn(operator.size)
    vec = vec / torch.norm(vec)
    eigenvalue = None
    for _ in range(steps):
        new_vec = operator.apply(vec).detach()
        eigenvalue = torch.dot(new_vec, vec).item()
        vec = new_vec / torch.norm(new_vec)
    return eigenvalue, vec


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
dataloader = DataLoader(TensorDataset(torch.randn(64, 6), torch.randint(0, 3, (64,))), batch_size=32)
criterion = F.cross_entropy
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    for inputs, targets in dataloader:
        optimizer.zero_grad()
        criterion(model(inputs), targets).backward()
        optimizer.step()
    op = HVPOperator(model, dataloader, criterion)
    top_eig, _ = power_iteration(op)
    print(epoch, "top hessian eigenvalue", round(top_eig, 4))
