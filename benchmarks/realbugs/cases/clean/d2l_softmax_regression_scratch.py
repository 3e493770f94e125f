import torch


def softmax(X):
    X_exp = torch.exp(X)
    partition = X_exp.sum(1, keepdims=True)
    return X_exp / partition


class SoftmaxRegressionScratch:
    def __init__(self, num_inputs, num_outputs, lr, sigma=0.01):
        self.num_inputs = num_inputs
        self.num_outputs = num_outputs
        self.lr = lr
        self.W = torch.normal(0, sigma, size=(num_inputs, num_outputs), requires_grad=True)
        self.b = torch.zeros(num_outputs, requires_grad=True)

    def parameters(self):
        return [self.W, self.b]

    def forward(self, X):
        X = X.reshape((-1, self.W.shape[0]))
        return softmax(torch.matmul(X, self.W) + self.b)

    def loss(self, y_hat, y):
        return cross_entropy(y_hat, y)


def cross_entropy(y_hat, y):
    return -torch.log(y_hat[list(range(len(y_hat))), y]).mean()


class SGD:
    """Minibatch stochastic gradient descent."""
    def __init__(self, params, lr):
        self.params = params
        self.lr = lr

    def step(self):
        for param in self.params:
            param -= self.lr * param.grad

    def zero_grad(self):
        for param in self.params:
            if param.grad is not None:
                param.grad.zero_()


def accuracy(y_hat, y):
    y_hat = y_hat.reshape((-1, y_hat.shape[-1]))
    preds = y_hat.argmax(axis=1).type(y.dtype)
    compare = (preds == y.reshape(-1)).type(torch.float32)
    return compare.mean()


torch.manual_seed(0)
X_train = torch.rand(64, 1, 6, 6)
y_train = torch.randint(0, 10, (64,))
X_val = torch.rand(32, 1, 6, 6)
y_val = torch.randint(0, 10, (32,))

model = SoftmaxRegressionScratch(num_inputs=36, num_outputs=10, lr=0.1)
optim = SGD(model.parameters(), model.lr)

max_epochs = 3
batch_size = 16
for epoch in range(max_epochs):
    for i in range(0, len(X_train), batch_size):
        X, y = X_train[i:i + batch_size], y_train[i:i + batch_size]
        l = model.loss(model.forward(X), y)
        optim.zero_grad()
        with torch.no_grad():
            l.backward()
            optim.step()
    with torch.no_grad():
        y_hat = model.forward(X_val)
        print(epoch, float(model.loss(y_hat, y_val)), float(accuracy(y_hat, y_val)))
