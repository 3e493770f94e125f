from copy import deepcopy

import torch
from torch import nn
from torch.nn import functional as F
from torch.autograd import Variable
import torch.utils.data


def variable(t: torch.Tensor, use_cuda=True, **kwargs):
    if torch.cuda.is_available() and use_cuda:
        t = t.cuda()
    return Variable(t, **kwargs)


class EWC(object):
    def __init__(self, model: nn.Module, dataset: list):

        self.model = model
        self.dataset = dataset

        self.params = {n: p for n, p in self.model.named_parameters() if p.requires_grad}
        self._means = {}
        self._precision_matrices = self._diag_fisher()

        for n, p in deepcopy(self.params).items():
            self._means[n] = variable(p.data)

    def _diag_fisher(self):
        precision_matrices = {}
        for n, p in deepcopy(self.params).items():
            p.data.zero_()
            precision_matrices[n] = variable(p.data)

        self.model.eval()
        for input in self.dataset:
            self.model.zero_grad()
            input = variable(input)
            output = self.model(input).view(1, -1)
            label = output.max(1)[1].view(-1)
            loss = F.nll_loss(F.log_softmax(output, dim=1), label)
            loss.backward()

            for n, p in self.model.named_parameters():
                precision_matrices[n].data += p.grad.data ** 2 / len(self.dataset)

        precision_matrices = {n: p for n, p in precision_matrices.items()}
        return precision_matrices

    def penalty(self, model: nn.Module):
        loss = 0
        for n, p in model.named_parameters():
            _loss = self._precision_matrices[n] * (p - self._means[n]) ** 2
            loss += _loss.sum()
        return loss


def normal_train(model: nn.Module, optimizer: torch.optim, data_loader):
    model.train()
    epoch_loss = 0
    for input, target in data_loader:
        input, target = variable(input), variable(target)
        optimizer.zero_grad()
        output = model(input)
        loss = F.cross_entropy(output, target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()
    return epoch_loss / len(data_loader)


def ewc_train(model: nn.Module, optimizer: torch.optim, data_loader, ewc: EWC, importance: float):
    model.train()
    epoch_loss = 0
    for input, target in data_loader:
        input, target = variable(input), variable(target)
        optimizer.zero_grad()
        output = model(input)
        loss = F.cross_entropy(output, target) + importance * ewc.penalty(model)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()
    return epoch_loss / len(data_loader)


def test(model: nn.Module, data_loader):
    model.eval()
    correct = 0
    n = 0
    for input, target in data_loader:
        input, target = variable(input), variable(target)
        output = model(input)
        correct += (F.softmax(output, dim=1).max(dim=1)[1] == target).data.sum().item()
        n += len(target)
    return correct / n


class MLP(nn.Module):
    def __init__(self, hidden_size=32):
        super(MLP, self).__init__()
        self.fc1 = nn.Linear(20, hidden_size)
        self.fc2 = nn.Linear(hidden_size, hidden_size)
        self.fc3 = nn.Linear(hidden_size, 10)

    def forward(self, input):
        x = F.relu(self.fc1(input))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def permuted_task(perm, n=64, batch_size=16):
    x = torch.randn(n, 20)[:, perm]
    y = torch.randint(0, 10, (n,))
    return [(x[i:i + batch_size], y[i:i + batch_size]) for i in range(0, n, batch_size)]


def sample_batch(task, sample_size=8):
    inputs = torch.cat([b[0] for b in task])
    return [inputs[i] for i in torch.randperm(len(inputs))[:sample_size]]


if __name__ == "__main__":
    torch.manual_seed(0)
    epochs = 2
    importance = 1000
    lr = 1e-2
    tasks = [permuted_task(torch.randperm(20)) for _ in range(3)]

    model = MLP()
    optimizer = torch.optim.SGD(params=model.parameters(), lr=lr)
    for task in range(len(tasks)):
        if task == 0:
            for _ in range(epochs):
                normal_train(model, optimizer, tasks[task])
        else:
            old_tasks = []
            for sub_task in range(task):
                old_tasks = old_tasks + sample_batch(tasks[sub_task])
            ewc = EWC(model, old_tasks)
            for _ in range(epochs):
                ewc_train(model, optimizer, tasks[task], ewc, importance)
        print(task, [round(test(model, tasks[sub_task]), 3) for sub_task in range(task + 1)])
