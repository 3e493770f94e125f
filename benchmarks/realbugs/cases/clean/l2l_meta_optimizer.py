import math
from functools import reduce
from operator import mul

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable


class Args:
    batch_size = 16
    optimizer_steps = 6
    truncated_bptt_step = 3
    updates_per_epoch = 2
    max_epoch = 2
    hidden_size = 10


args = Args()


def get_batch(batch_size):
    x = torch.randn(batch_size, 10)
    x = x - 2 * x.pow(2)
    y = x.sum(1)
    return x, y


def preprocess_gradients(x):
    p = 10
    eps = 1e-6
    indicator = (x.abs() > math.exp(-p)).float()
    x1 = (x.abs() + eps).log() / p * indicator - (1 - indicator)
    x2 = x.sign() * indicator + math.exp(p) * x * (1 - indicator)

    return torch.cat((x1, x2), 1)


class Model(nn.Module):

    def __init__(self):
        super(Model, self).__init__()
        self.linear1 = nn.Linear(10, 16)
        self.linear2 = nn.Linear(16, 1)

    def forward(self, inputs):
        x = torch.tanh(self.linear1(inputs))
        x = self.linear2(x)
        return x.squeeze(-1)


class MetaOptimizer(nn.Module):

    def __init__(self, model, hidden_size):
        super(MetaOptimizer, self).__init__()
        self.meta_model = model

        self.hidden_size = hidden_size

        self.linear1 = nn.Linear(3, hidden_size)

        self.lstm = nn.LSTMCell(hidden_size, hidden_size)

        self.linear2 = nn.Linear(hidden_size, 1)
        self.linear2.weight.data.mul_(0.1)
        self.linear2.bias.data.fill_(0.0)

    def reset_lstm(self, keep_states=False, model=None):
        self.meta_model.reset()
        self.meta_model.copy_params_from(model)

        if keep_states:
            self.hx = Variable(self.hx.data)
            self.cx = Variable(self.cx.data)
        else:
            self.hx = Variable(torch.zeros(1, self.hidden_size))
            self.cx = Variable(torch.zeros(1, self.hidden_size))

    def forward(self, x):
        x = torch.tanh(self.linear1(x))

        if x.size(0) != self.hx.size(0):
            self.hx = self.hx.expand(x.size(0), self.hx.size(1))
            self.cx = self.cx.expand(x.size(0), self.cx.size(1))

        self.hx, self.cx = self.lstm(x, (self.hx, self.cx))
        x = self.hx

        x = self.linear2(x)
        return x.squeeze()

    def meta_update(self, model_with_grads, loss):
        grads = []

        for module in model_with_grads.children():
            grads.append(module._parameters['weight'].grad.data.view(-1).unsqueeze(-1))
            grads.append(module._parameters['bias'].grad.data.view(-1).unsqueeze(-1))

        flat_params = self.meta_model.get_flat_params()
        flat_grads = preprocess_gradients(torch.cat(grads))

        inputs = Variable(torch.cat((flat_grads, flat_params.data.unsqueeze(-1)), 1))

        flat_params = flat_params + self(inputs)

        self.meta_model.set_flat_params(flat_params)

        self.meta_model.copy_params_to(model_with_grads)
        return self.meta_model.model


class MetaModel:

    def __init__(self, model):
        self.model = model

    def reset(self):
        for module in self.model.children():
            module._parameters['weight'] = Variable(
                module._parameters['weight'].data)
            module._parameters['bias'] = Variable(
                module._parameters['bias'].data)

    def get_flat_params(self):
        params = []

        for module in self.model.children():
            params.append(module._parameters['weight'].view(-1))
            params.append(module._parameters['bias'].view(-1))

        return torch.cat(params)

    def set_flat_params(self, flat_params):
        offset = 0
        for i, module in enumerate(self.model.children()):
            weight_shape = module._parameters['weight'].size()
            bias_shape = module._parameters['bias'].size()

            weight_flat_size = reduce(mul, weight_shape, 1)
            bias_flat_size = reduce(mul, bias_shape, 1)

            module._parameters['weight'] = flat_params[
                offset:offset + weight_flat_size].view(*weight_shape)
            module._parameters['bias'] = flat_params[
                offset + weight_flat_size:offset + weight_flat_size + bias_flat_size].view(*bias_shape)

            offset += weight_flat_size + bias_flat_size

    def copy_params_from(self, model):
        for modelA, modelB in zip(self.model.parameters(), model.parameters()):
            modelA.data.copy_(modelB.data)

    def copy_params_to(self, model):
        for modelA, modelB in zip(self.model.parameters(), model.parameters()):
            modelB.data.copy_(modelA.data)


def main():
    torch.manual_seed(0)
    meta_model = Model()

    meta_optimizer = MetaOptimizer(MetaModel(meta_model), args.hidden_size)

    optimizer = optim.Adam(meta_optimizer.parameters(), lr=1e-3)
    loss_fn = lambda f_x, y: (f_x - y).pow(2).mean()

    for epoch in range(args.max_epoch):
        decrease_in_loss = 0.0
        for i in range(args.updates_per_epoch):

            model = Model()

            x, y = get_batch(args.batch_size)
            x, y = Variable(x), Variable(y)

            f_x = model(x)
            initial_loss = loss_fn(f_x, y)

            for k in range(args.optimizer_steps // args.truncated_bptt_step):
                meta_optimizer.reset_lstm(keep_states=k > 0, model=model)

                loss_sum = 0
                for j in range(args.truncated_bptt_step):
                    x, y = get_batch(args.batch_size)
                    x, y = Variable(x), Variable(y)

                    f_x = model(x)
                    loss = loss_fn(f_x, y)
                    model.zero_grad()
                    loss.backward()

                    meta_model = meta_optimizer.meta_update(model, loss.data)

                    f_x = meta_model(x)
                    loss = loss_fn(f_x, y)
                    loss_sum += loss

                meta_optimizer.zero_grad()
                loss_sum.backward()
                for param in meta_optimizer.parameters():
                    param.grad.data.clamp_(-1, 1)
                optimizer.step()

            decrease_in_loss += loss.item() / initial_loss.item()

        print("Epoch: {}, average final/initial loss ratio: {}".format(epoch,
                                                                       decrease_in_loss / args.updates_per_epoch))


if __name__ == "__main__":
    main()
