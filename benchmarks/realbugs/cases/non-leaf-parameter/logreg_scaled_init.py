import torch

torch.manual_seed(0)
N, D_in = 64, 5
x = torch.randn(N, D_in)
y = (x.sum(dim=1, keepdim=True) > 0).float()

W = torch.randn(D_in, 1, requires_grad=True) * 0.01
b = torch.zeros(1, requires_grad=True)
learning_rate = 0.5

for t in range(5):
    y_pred = torch.sigmoid(x.mm(W) + b)
    loss = torch.nn.functional.binary_cross_entropy(y_pred, y)
    print(t, loss.item())
    loss.backward()
    W.data -= learning_rate * W.grad
    b.data -= learning_rate * b.grad
    W.grad.zero_()
    b.grad.zero_()
