import copy
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(0)


class NeuralNetRegressor(object):
    cuda_dependent_attributes_ = ['module_', 'optimizer_']

    def __init__(self, module, lr=0.1, max_epochs=2, batch_size=64):
        self.module = module
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size

    def initialize(self):
        self.module_ = self.module()
        self.criterion_ = nn.MSELoss()
        self.optimizer_ = torch.optim.SGD(self.module_.parameters(), lr=self.lr)
        return self

    def train_step(self, Xi, yi):
        self.module_.train()
        self.optimizer_.zero_grad()
        y_pred = self.module_(Xi)
        loss = self.criterion_(y_pred, yi)
        loss.backward()
        self.optimizer_.step()
        return loss

    def partial_fit(self, X, y):
        for epoch in range(self.max_epochs):
            for i in range(0, len(X), self.batch_size):
                self.train_step(X[i:i + self.batch_size], y[i:i + self.batch_size])
        return self

    def __getstate__(self):
        state = self.__dict__.copy()
        for key in self.cuda_dependent_attributes_:
            if key in state:
                val = state.pop(key)
                with tempfile.SpooledTemporaryFile() as f:
                    torch.save(val, f)
                    f.seek(0)
                    state[key] = f.read()
        return state

    def __setstate__(self, state):
        for key in self.cuda_dependent_attributes_:
            if key not in state:
                continue
            dump = state.pop(key)
            with tempfile.SpooledTemporaryFile() as f:
                f.write(dump)
                f.seek(0)
                val = torch.load(f, weights_only=False)
            state[key] = val
        self.__dict__.update(state)


def get_data(n, d):
    X = torch.randn(n, d)
    y = X @ torch.randn(d, 1)
    y -= y.min()
    y /= y.max()
    return X, y


X, y = get_data(256, 28)


class Simple(nn.Module):
    def __init__(self):
        super().__init__()
        self.simple = nn.Sequential(
            nn.Linear(28, 1),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.simple(x)


n1 = NeuralNetRegressor(
    module=Simple,
).initialize()


def check(net, name=''):
    p = next(net.module_.parameters()).detach()
    print(name + ' first params =', p.flatten()[:3].tolist())


check(n1, name="n1")
n1.partial_fit(X, y)
check(n1, name="n1")

n2 = copy.deepcopy(n1)
check(n2, name="n2")

n3 = n2.partial_fit(X, y)
check(n3, name="n3")
