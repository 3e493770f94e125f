import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

PRIMITIVES = ['none', 'skip_connect', 'fc_relu', 'fc_tanh']


class Zero(nn.Module):
    def forward(self, x):
        return x.mul(0.)


class Identity(nn.Module):
    def forward(self, x):
        return x


OPS = {
    'none': lambda C: Zero(),
    'skip_connect': lambda C: Identity(),
    'fc_relu': lambda C: nn.Sequential(nn.ReLU(inplace=False), nn.Linear(C, C), nn.BatchNorm1d(C, affine=False)),
    'fc_tanh': lambda C: nn.Sequential(nn.Tanh(), nn.Linear(C, C), nn.BatchNorm1d(C, affine=False)),
}


class MixedOp(nn.Module):
    def __init__(self, C):
        super(MixedOp, self).__init__()
        self._ops = nn.ModuleList()
        for primitive in PRIMITIVES:
            self._ops.append(OPS[primitive](C))

    def forward(self, x, weights):
        return sum(w * op(x) for w, op in zip(weights, self._ops))


class Cell(nn.Module):
    def __init__(self, steps, C):
        super(Cell, self).__init__()
        self._steps = steps
        self._ops = nn.ModuleList()
        for i in range(self._steps):
            for j in range(1 + i):
                self._ops.append(MixedOp(C))

    def forward(self, s0, weights):
        states = [s0]
        offset = 0
        for i in range(self._steps):
            s = sum(self._ops[offset + j](h, weights[offset + j]) for j, h in enumerate(states))
            offset += len(states)
            states.append(s)
        return torch.cat(states[-self._steps:], dim=1)


class Network(nn.Module):
    def __init__(self, C, num_classes, steps, criterion):
        super(Network, self).__init__()
        self._C = C
        self._num_classes = num_classes
        self._steps = steps
        self._criterion = criterion
        self.stem = nn.Sequential(nn.Linear(8, C), nn.BatchNorm1d(C))
        self.cell = Cell(steps, C)
        self.classifier = nn.Linear(C * steps, num_classes)
        self._initialize_alphas()

    def new(self):
        model_new = Network(self._C, self._num_classes, self._steps, self._criterion)
        for x, y in zip(model_new.arch_parameters(), self.arch_parameters()):
            x.data.copy_(y.data)
        return model_new

    def forward(self, input):
        s0 = self.stem(input)
        weights = F.softmax(self.alphas_normal, dim=-1)
        return self.classifier(self.cell(s0, weights))

    def _loss(self, input, target):
        logits = self(input)
        return self._criterion(logits, target)

    def _initialize_alphas(self):
        k = sum(1 for i in range(self._steps) for n in range(1 + i))
        num_ops = len(PRIMITIVES)
        self.alphas_normal = Variable(1e-3 * torch.randn(k, num_ops), requires_grad=True)
        self._arch_parameters = [self.alphas_normal]

    def arch_parameters(self):
        return self._arch_parameters


def _concat(xs):
    return torch.cat([x.view(-1) for x in xs])


class Architect(object):

    def __init__(self, model, args):
        self.network_momentum = args['momentum']
        self.network_weight_decay = args['weight_decay']
        self.model = model
        self.optimizer = torch.optim.Adam(self.model.arch_parameters(),
                                          lr=args['arch_learning_rate'], betas=(0.5, 0.999),
                                          weight_decay=args['arch_weight_decay'])

    def _compute_unrolled_model(self, input, target, eta, network_optimizer):
        loss = self.model._loss(input, target)
        theta = _concat(self.model.parameters()).data
        try:
            moment = _concat(network_optimizer.state[v]['momentum_buffer'] for v in self.model.parameters()).mul_(self.network_momentum)
        except:
            moment = torch.zeros_like(theta)
        dtheta = _concat(torch.autograd.grad(loss, self.model.parameters())).data + self.network_weight_decay * theta
        unrolled_model = self._construct_model_from_theta(theta.sub(moment + dtheta, alpha=eta))
        return unrolled_model

    def step(self, input_train, target_train, input_valid, target_valid, eta, network_optimizer, unrolled):
        self.optimizer.zero_grad()
        if unrolled:
            self._backward_step_unrolled(input_train, target_train, input_valid, target_valid, eta, network_optimizer)
        else:
            self._backward_step(input_valid, target_valid)
        self.optimizer.step()

    def _backward_step(self, input_valid, target_valid):
        loss = self.model._loss(input_valid, target_valid)
        loss.backward()

    def _backward_step_unrolled(self, input_train, target_train, input_valid, target_valid, eta, network_optimizer):
        unrolled_model = self._compute_unrolled_model(input_train, target_train, eta, network_optimizer)
        unrolled_loss = unrolled_model._loss(input_valid, target_valid)

        unrolled_loss.backward()
        dalpha = [v.grad for v in unrolled_model.arch_parameters()]
        vector = [v.grad.data for v in unrolled_model.parameters()]
        implicit_grads = self._hessian_vector_product(vector, input_train, target_train)

        for g, ig in zip(dalpha, implicit_grads):
            g.data.sub_(ig.data, alpha=eta)

        for v, g in zip(self.model.arch_parameters(), dalpha):
            if v.grad is None:
                v.grad = Variable(g.data)
            else:
                v.grad.data.copy_(g.data)

    def _construct_model_from_theta(self, theta):
        model_new = self.model.new()
        model_dict = self.model.state_dict()

        params, offset = {}, 0
        for k, v in self.model.named_parameters():
            v_length = np.prod(v.size())
            params[k] = theta[offset: offset + v_length].view(v.size())
            offset += v_length

        assert offset == len(theta)
        model_dict.update(params)
        model_new.load_state_dict(model_dict)
        return model_new

    def _hessian_vector_product(self, vector, input, target, r=1e-2):
        R = r / _concat(vector).norm()
        for p, v in zip(self.model.parameters(), vector):
            p.data.add_(v, alpha=R)
        loss = self.model._loss(input, target)
        grads_p = torch.autograd.grad(loss, self.model.arch_parameters())

        for p, v in zip(self.model.parameters(), vector):
            p.data.sub_(v, alpha=2 * R)
        loss = self.model._loss(input, target)
        grads_n = torch.autograd.grad(loss, self.model.arch_parameters())

        for p, v in zip(self.model.parameters(), vector):
            p.data.add_(v, alpha=R)

        return [(x - y).div_(2 * R) for x, y in zip(grads_p, grads_n)]


torch.manual_seed(2)
np.random.seed(2)
args = {'momentum': 0.9, 'weight_decay': 3e-4, 'arch_learning_rate': 3e-2, 'arch_weight_decay': 1e-3,
        'learning_rate': 0.05, 'grad_clip': 5}
criterion = nn.CrossEntropyLoss()
model = Network(6, 3, 2, criterion)
optimizer = torch.optim.SGD(model.parameters(), args['learning_rate'],
                            momentum=args['momentum'], weight_decay=args['weight_decay'])
architect = Architect(model, args)

w_true = torch.randn(8, 3)
x_all = torch.randn(192, 8)
y_all = (x_all @ w_true).argmax(1)
train_x, train_y = x_all[:96], y_all[:96]
valid_x, valid_y = x_all[96:], y_all[96:]
alphas_before = model.alphas_normal.detach().clone()

for epoch in range(3):
    model.train()
    for step in range(4):
        input = train_x[step * 24:(step + 1) * 24]
        target = train_y[step * 24:(step + 1) * 24]
        input_search = valid_x[step * 24:(step + 1) * 24]
        target_search = valid_y[step * 24:(step + 1) * 24]

        architect.step(input, target, input_search, target_search, args['learning_rate'], optimizer, unrolled=True)

        optimizer.zero_grad()
        logits = model(input)
        loss = criterion(logits, target)

        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), args['grad_clip'])
        optimizer.step()
    print(epoch, loss.item())

model.eval()
with torch.no_grad():
    acc = (model(valid_x).argmax(1) == valid_y).float().mean().item()
print('valid acc', acc, 'alpha change', (model.alphas_normal - alphas_before).abs().max().item())
print(F.softmax(model.alphas_normal, dim=-1))
