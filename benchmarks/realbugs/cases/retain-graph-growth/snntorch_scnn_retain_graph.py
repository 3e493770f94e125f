import torch
import torch.nn as nn

torch.manual_seed(0)


class ATan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, mem, alpha=2.0):
        ctx.save_for_backward(mem)
        ctx.alpha = alpha
        return (mem > 0).float()

    @staticmethod
    def backward(ctx, grad_output):
        (mem,) = ctx.saved_tensors
        grad = ctx.alpha / 2 / (1 + (torch.pi / 2 * ctx.alpha * mem).pow(2)) * grad_output
        return grad, None


class Leaky(nn.Module):
    def __init__(self, beta, threshold=1.0, init_hidden=False, output=False):
        super().__init__()
        self.beta = beta
        self.threshold = threshold
        self.init_hidden = init_hidden
        self.output = output
        self.mem = torch.zeros(1)

    def forward(self, input_):
        self.mem = self.beta * self.mem + input_
        spk = ATan.apply(self.mem - self.threshold)
        self.mem = self.mem - spk * self.threshold
        if self.output:
            return spk, self.mem
        return spk


class Net(nn.Module):
    def __init__(self, beta=0.5, num_steps=4):
        super().__init__()
        self.num_steps = num_steps
        self.net = nn.Sequential(
            nn.Conv2d(1, 4, 5),
            nn.MaxPool2d(2),
            Leaky(beta=beta, init_hidden=True),
            nn.Conv2d(4, 8, 3),
            nn.MaxPool2d(2),
            Leaky(beta=beta, init_hidden=True),
            nn.Flatten(),
            nn.Linear(8, 10),
            Leaky(beta=beta, init_hidden=True, output=True),
        )

    def forward(self, x):
        mem_rec = []
        spk_rec = []
        for step in range(self.num_steps):
            spk_out, mem_out = self.net(x)
            spk_rec.append(spk_out)
            mem_rec.append(mem_out)
        return torch.stack(spk_rec), torch.stack(mem_rec)


net = Net()
optimizer = torch.optim.Adam(net.parameters(), lr=2e-2, betas=(0.9, 0.999))
loss_fn = nn.CrossEntropyLoss()

train_loader = [(torch.rand(4, 1, 12, 12), torch.randint(0, 10, (4,))) for _ in range(3)]
for data, targets in train_loader:
    net.train()
    spk_rec, mem_rec = net(data)
    loss_val = loss_fn(spk_rec.sum(0), targets)
    optimizer.zero_grad()
    loss_val.backward(retain_graph=True)
    optimizer.step()
