import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from contextlib import contextmanager
from torch.nn import init


class _Manager:

    defer_backward = False
    deferred_gradients = []
    context_stack = []

    @classmethod
    def backward(cls, variable, gradient=None):
        if gradient is None:
            gradient = torch.ones_like(variable.data)

        if cls.defer_backward:
            cls.deferred_gradients.append((variable, gradient))
        else:
            variable.backward(gradient)

    @classmethod
    def get_current_context(cls):
        if cls.context_stack:
            return cls.context_stack[-1]
        else:
            return None


@contextmanager
def synthesizer_context(context):
    _Manager.context_stack.append(context)
    yield
    _Manager.context_stack.pop()


class _SyntheticGradientUpdater(torch.autograd.Function):

    @staticmethod
    def forward(ctx, trigger, synthetic_gradient):
        (_, needs_synthetic_gradient_grad) = ctx.needs_input_grad
        if not needs_synthetic_gradient_grad:
            raise ValueError('synthetic_gradient should need gradient but it does not')

        ctx.save_for_backward(synthetic_gradient)
        return trigger.clone()

    @staticmethod
    def backward(ctx, true_gradient):
        (synthetic_gradient,) = ctx.saved_tensors
        (batch_size, *_) = synthetic_gradient.size()
        grad_synthetic_gradient = (
            2 / batch_size * (synthetic_gradient - true_gradient.data)
        )
        return (true_gradient, grad_synthetic_gradient)


class BackwardInterface(torch.nn.Module):

    def __init__(self, synthesizer):
        super().__init__()
        self.synthesizer = synthesizer

    def receive(self, trigger):
        return self.synthesizer(trigger, _Manager.get_current_context()).detach()

    def forward(self, trigger):
        if self.training:
            self.backward(trigger)
            return self.make_trigger(trigger.detach())
        else:
            return trigger

    def backward(self, trigger, factor=1):
        if self.training:
            synthetic_gradient = self.receive(trigger)
            _Manager.backward(trigger, synthetic_gradient.data * factor)

    def make_trigger(self, trigger):
        if self.training:
            return _SyntheticGradientUpdater.apply(
                trigger,
                self.synthesizer(trigger, _Manager.get_current_context())
            )
        else:
            return trigger


class BasicSynthesizer(torch.nn.Module):

    def __init__(self, output_dim, n_hidden=0, hidden_dim=None, trigger_dim=None, context_dim=None):
        super().__init__()

        if hidden_dim is None:
            hidden_dim = output_dim
        if trigger_dim is None:
            trigger_dim = output_dim

        top_layer_dim = output_dim if n_hidden == 0 else hidden_dim

        self.input_trigger = torch.nn.Linear(in_features=trigger_dim, out_features=top_layer_dim)

        if context_dim is not None:
            self.input_context = torch.nn.Linear(in_features=context_dim, out_features=top_layer_dim)
        else:
            self.input_context = None

        self.layers = torch.nn.ModuleList([
            torch.nn.Linear(
                in_features=hidden_dim,
                out_features=(hidden_dim if layer_index < n_hidden - 1 else output_dim)
            )
            for layer_index in range(n_hidden)
        ])

        if n_hidden > 0:
            init.constant_(self.layers[-1].weight, 0)
        else:
            init.constant_(self.input_trigger.weight, 0)
            if context_dim is not None:
                init.constant_(self.input_context.weight, 0)

    def forward(self, trigger, context):
        last = self.input_trigger(trigger)

        if self.input_context is not None:
            last += self.input_context(context)

        for layer in self.layers:
            last = layer(F.relu(last))

        return last


def one_hot(indexes, n_classes):
    result = torch.FloatTensor(indexes.size() + (n_classes,))
    result.zero_()
    indexes_rank = len(indexes.size())
    result.scatter_(dim=indexes_rank, index=indexes.data.unsqueeze(dim=indexes_rank), value=1)
    return result


class Net(nn.Module):
    def __init__(self, use_dni=True, use_context=True):
        super(Net, self).__init__()
        self.use_dni = use_dni
        self.use_context = use_context
        self.hidden1 = nn.Linear(64, 32, bias=False)
        self.hidden1_bn = nn.BatchNorm1d(32)
        self.hidden2 = nn.Linear(32, 32, bias=False)
        self.hidden2_bn = nn.BatchNorm1d(32)
        if self.use_dni:
            context_dim = 4 if self.use_context else None
            self.backward_interface = BackwardInterface(
                BasicSynthesizer(output_dim=32, n_hidden=1, context_dim=context_dim)
            )
        self.output = nn.Linear(32, 4, bias=False)
        self.output_bn = nn.BatchNorm1d(4)

    def forward(self, x, y=None):
        x = x.view(x.size()[0], -1)
        x = self.hidden1_bn(self.hidden1(x))
        x = self.hidden2_bn(self.hidden2(F.relu(x)))
        if self.use_dni and self.training:
            if self.use_context:
                context = one_hot(y, 4)
            else:
                context = None
            with synthesizer_context(context):
                x = self.backward_interface(x)
        x = self.output_bn(self.output(F.relu(x)))
        return F.log_softmax(x, dim=1)


torch.manual_seed(1)
model = Net()
optimizer = optim.Adam(model.parameters(), lr=0.003)
proto = torch.randn(4, 64)
labels = torch.randint(0, 4, (320,))
images = proto[labels] + 0.8 * torch.randn(320, 64)


def train(epoch):
    model.train()
    for batch_idx in range(10):
        data = images[batch_idx * 32:(batch_idx + 1) * 32]
        target = labels[batch_idx * 32:(batch_idx + 1) * 32]
        optimizer.zero_grad()
        output = model(data, target)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
    return loss.item()


def test():
    model.eval()
    with torch.no_grad():
        output = model(images)
        return output.data.max(1)[1].eq(labels).float().mean().item()


before = test()
for epoch in range(1, 5):
    last = train(epoch)
print('loss', last, 'accuracy', before, '->', test())
