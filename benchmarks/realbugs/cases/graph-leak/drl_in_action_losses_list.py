import numpy as np
import torch

torch.manual_seed(0)
np.random.seed(0)


def nn(x,w1,w2):
    l1 = x @ w1
    l1 = torch.relu(l1)
    l2 = l1 @ w2
    return l2

w1 = torch.randn(784,200,requires_grad=True)
w2 = torch.randn(200,10,requires_grad=True)

train_data = torch.randint(0, 256, (600, 28, 28), dtype=torch.uint8)
train_labels = torch.randint(0, 10, (600,))

lr = 0.0001
epochs = 12
batch_size = 100
losses = []
lossfn = torch.nn.CrossEntropyLoss()
for i in range(epochs):
    rid = np.random.randint(0,train_data.shape[0],size=batch_size)
    x = train_data[rid].float().flatten(start_dim=1)
    x /= x.max()
    pred = nn(x,w1,w2)
    target = train_labels[rid]
    loss = lossfn(pred,target)
    losses.append(loss)
    loss.backward()
    with torch.no_grad():
        w1 -= lr * w1.grad
        w2 -= lr * w2.grad
