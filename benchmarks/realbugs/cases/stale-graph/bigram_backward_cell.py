import torch
import torch.nn.functional as F

torch.manual_seed(0)

xs = torch.tensor([0, 5, 13, 13, 1])
ys = torch.tensor([5, 13, 13, 1, 0])
W = torch.randn((27, 27), requires_grad=True)

xenc = F.one_hot(xs, num_classes=27).float()

#Forward Pass
logits = (xenc @ W)
counts = logits.exp()
prob = counts / counts.sum(1, keepdim=True)
loss = -prob[torch.arange(5), ys].log().mean()
print(loss.item())

for k in range(10):
    #Backward Pass
    W.grad = None
    loss.backward()

    #update the weights
    W.data += -0.1 * W.grad
