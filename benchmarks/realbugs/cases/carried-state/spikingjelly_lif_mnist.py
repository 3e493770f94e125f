import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Sigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha=4.0):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return (x >= 0).to(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        sg = torch.sigmoid(ctx.alpha * x)
        return grad_output * (1.0 - sg) * sg * ctx.alpha, None


class LIFNode(nn.Module):
    def __init__(self, tau=2.0, v_threshold=1.0, v_reset=0.0):
        super().__init__()
        self.tau = tau
        self.v_threshold = v_threshold
        self.v_reset = v_reset
        self.v = v_reset

    def neuronal_charge(self, x):
        self.v = self.v + (x - (self.v - self.v_reset)) / self.tau

    def forward(self, x):
        self.neuronal_charge(x)
        spike = Sigmoid.apply(self.v - self.v_threshold)
        self.v = spike * self.v_reset + (1.0 - spike) * self.v
        return spike

    def reset(self):
        self.v = self.v_reset


T = 4
net = nn.Sequential(nn.Flatten(), nn.Linear(28, 10, bias=False), LIFNode(tau=2.0))
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)

train_data_loader = [(torch.rand(4, 28), torch.randint(0, 10, (4,))) for _ in range(3)]
for img, label in train_data_loader:
    optimizer.zero_grad()
    label_onehot = F.one_hot(label, 10).float()
    out_fr = 0.0
    for t in range(T):
        encoded_img = (torch.rand_like(img) < img).float()
        out_fr += net(encoded_img)
    out_fr = out_fr / T
    loss = F.mse_loss(out_fr, label_onehot)
    loss.backward()
    optimizer.step()
