import torch

torch.manual_seed(0)
threes = torch.rand(20, 8, 8) * 0.5 + 0.5
sevens = torch.rand(20, 8, 8) * 0.5
train_x = torch.cat([threes, sevens]).view(-1, 8 * 8)
train_y = torch.tensor([1] * len(threes) + [0] * len(sevens)).unsqueeze(1)


def init_params(size, std=1.0):
    return (torch.randn(size) * std).requires_grad_()


weights = init_params((8 * 8, 1))
bias = init_params(1)


def linear1(xb):
    return xb @ weights + bias


preds = linear1(train_x)
corrects = (preds > 0.0).float() == train_y
print(corrects.float().mean().item())

weights[0] *= 1.0001
preds = linear1(train_x)
print(((preds > 0.0).float() == train_y).float().mean().item())


def mnist_loss(predictions, targets):
    predictions = predictions.sigmoid()
    return torch.where(targets == 1, 1 - predictions, predictions).mean()


lr = 1.
params = weights, bias
for epoch in range(3):
    loss = mnist_loss(linear1(train_x), train_y)
    loss.backward()
    for p in params:
        p.data -= p.grad * lr
        p.grad.zero_()
    print(epoch, loss.item())
