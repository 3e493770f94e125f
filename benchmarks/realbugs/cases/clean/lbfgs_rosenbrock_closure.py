import torch
import torch.optim as optim


def f(x):
    return (1 - x[0])**2 + 100 * (x[1] - x[0]**2)**2


x_gd = 10*torch.ones(2, 1)
x_gd.requires_grad = True
gd = optim.SGD([x_gd], lr=1e-5)
history_gd = []
for i in range(20):
    gd.zero_grad()
    objective = f(x_gd)
    objective.backward()
    gd.step()
    history_gd.append(objective.item())


def closure():
    lbfgs.zero_grad()
    objective = f(x_lbfgs)
    objective.backward()
    return objective


x_lbfgs = 10*torch.ones(2, 1)
x_lbfgs.requires_grad = True

lbfgs = optim.LBFGS([x_lbfgs],
                    history_size=10,
                    max_iter=4,
                    line_search_fn="strong_wolfe")

history_lbfgs = []
for i in range(20):
    history_lbfgs.append(f(x_lbfgs).item())
    lbfgs.step(closure)

print('GD', history_gd[-1], 'L-BFGS', history_lbfgs[-1])
