import torch

torch.manual_seed(0)
X = torch.randn(64, 3)
true_w = torch.tensor([[2.0], [-3.4], [1.5]])
y = X @ true_w + 4.2 + 0.01 * torch.randn(64, 1)

w = torch.normal(0, 0.01, size=(3, 1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)
lr = 0.1


def linreg(X, w, b):
    return X @ w + b


def squared_loss(y_hat, y):
    return ((y_hat - y) ** 2 / 2).mean()


def sgd(params, lr):
    for param in params:
        param -= lr * param.grad
        param.grad.zero_()


for epoch in range(3):
    l = squared_loss(linreg(X, w, b), y)
    l.backward()
    sgd([w, b], lr)
    print("epoch {}, loss {:f}".format(epoch + 1, l.item()))
