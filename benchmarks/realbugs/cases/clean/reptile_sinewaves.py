from copy import deepcopy

import numpy as np
import torch
from torch import nn

seed = 0
plot = False
innerstepsize = 0.02  # stepsize in inner SGD
innerepochs = 1  # number of epochs of each inner SGD
outerstepsize0 = 0.1  # stepsize of outer optimization, i.e., meta-optimization
niterations = 30  # number of outer updates; each iteration we sample one task and update on it

rng = np.random.RandomState(seed)
torch.manual_seed(seed)

# Define task distribution
x_all = np.linspace(-5, 5, 50)[:, None]  # All of the x points
ntrain = 10  # Size of training minibatches


def gen_task():
    "Generate classification problem"
    phase = rng.uniform(low=0, high=2 * np.pi)
    ampl = rng.uniform(0.1, 5)
    f_randomsine = lambda x: np.sin(x + phase) * ampl
    return f_randomsine


# Define model. Reptile paper uses ReLU, but Tanh gives slightly better results
model = nn.Sequential(
    nn.Linear(1, 64),
    nn.Tanh(),
    nn.Linear(64, 64),
    nn.Tanh(),
    nn.Linear(64, 1),
)


def totorch(x):
    return torch.autograd.Variable(torch.Tensor(x))


def train_on_batch(x, y):
    x = totorch(x)
    y = totorch(y)
    model.zero_grad()
    ypred = model(x)
    loss = (ypred - y).pow(2).mean()
    loss.backward()
    for param in model.parameters():
        param.data -= innerstepsize * param.grad.data


def predict(x):
    x = totorch(x)
    return model(x).data.numpy()


# one task and one minibatch, kept for the plots
f_plot = gen_task()
xtrain_plot = x_all[rng.choice(len(x_all), size=ntrain)]

# Reptile training loop
for iteration in range(niterations):
    weights_before = deepcopy(model.state_dict())
    # Generate task
    f = gen_task()
    y_all = f(x_all)
    # Do SGD on this task
    inds = rng.permutation(len(x_all))
    for _ in range(innerepochs):
        for start in range(0, len(x_all), ntrain):
            mbinds = inds[start:start + ntrain]
            train_on_batch(x_all[mbinds], y_all[mbinds])
    # Interpolate between current weights and trained weights from this task
    # I.e. (weights_before - weights_after) is the meta-gradient
    weights_after = model.state_dict()
    outerstepsize = outerstepsize0 * (1 - iteration / niterations)  # linear schedule
    model.load_state_dict({name: weights_before[name] + (weights_after[name] - weights_before[name]) * outerstepsize
                           for name in weights_before})

    if iteration == 0 or (iteration + 1) % 10 == 0:
        weights_before = deepcopy(model.state_dict())  # save snapshot before evaluation
        for inneriter in range(8):
            train_on_batch(xtrain_plot, f_plot(xtrain_plot))
        lossval = np.square(predict(x_all) - f_plot(x_all)).mean()
        print(f"iteration {iteration + 1}, loss on plotted curve {lossval:.3f}")
        model.load_state_dict(weights_before)  # restore from snapshot
