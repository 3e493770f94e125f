import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Args:
    batch_size = 16
    epochs = 2
    lr_max = 0.2
    lr_min = 0.0
    weight_decay = 5e-4
    momentum = 0.9
    epsilon = 8
    attack_iters = 3
    alpha = 2
    delta_init = "random"
    seed = 0


args = Args()

mu = torch.tensor([0.49, 0.48, 0.45]).view(3, 1, 1)
std = torch.tensor([0.25, 0.24, 0.26]).view(3, 1, 1)
upper_limit = (1 - mu) / std
lower_limit = (0 - mu) / std


def clamp(X, lower_limit, upper_limit):
    return torch.max(torch.min(X, upper_limit), lower_limit)


class PreActBlock(nn.Module):
    def __init__(self, planes):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv1 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)

    def forward(self, x):
        out = F.relu(self.bn1(x))
        out = self.conv1(out)
        out = self.conv2(F.relu(self.bn2(out)))
        return out + x


class PreActResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.layer1 = PreActBlock(8)
        self.bn = nn.BatchNorm2d(8)
        self.linear = nn.Linear(8, num_classes)

    def forward(self, x):
        out = self.layer1(self.conv1(x))
        out = F.relu(self.bn(out))
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(out)


def get_loaders(batch_size, n=48):
    X = torch.randn(n, 3, 8, 8)
    y = torch.randint(0, 10, (n,))
    return [(X[i:i + batch_size], y[i:i + batch_size]) for i in range(0, n, batch_size)]


def main():
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    train_loader = get_loaders(args.batch_size)

    epsilon = (args.epsilon / 255.) / std
    alpha = (args.alpha / 255.) / std

    model = PreActResNet()
    model.train()

    opt = torch.optim.SGD(model.parameters(), lr=args.lr_max, momentum=args.momentum, weight_decay=args.weight_decay)
    criterion = nn.CrossEntropyLoss()

    lr_steps = args.epochs * len(train_loader)
    scheduler = torch.optim.lr_scheduler.CyclicLR(opt, base_lr=args.lr_min, max_lr=args.lr_max,
                                                  step_size_up=lr_steps / 2, step_size_down=lr_steps / 2)

    for epoch in range(args.epochs):
        train_loss = 0
        train_acc = 0
        train_n = 0
        for i, (X, y) in enumerate(train_loader):
            delta = torch.zeros_like(X)
            if args.delta_init == 'random':
                for j in range(len(epsilon)):
                    delta[:, j, :, :].uniform_(-epsilon[j][0][0].item(), epsilon[0][0][0].item())
                delta.data = clamp(delta, lower_limit - X, upper_limit - X)
            delta.requires_grad = True
            for _ in range(args.attack_iters):
                output = model(X + delta)
                loss = criterion(output, y)
                loss.backward()
                grad = delta.grad.detach()
                delta.data = clamp(delta + alpha * torch.sign(grad), -epsilon, epsilon)
                delta.data = clamp(delta, lower_limit - X, upper_limit - X)
                delta.grad.zero_()
            delta = delta.detach()
            output = model(X + delta)
            loss = criterion(output, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            train_loss += loss.item() * y.size(0)
            train_acc += (output.max(1)[1] == y).sum().item()
            train_n += y.size(0)
            scheduler.step()
        print(epoch, scheduler.get_last_lr()[0], train_loss / train_n, train_acc / train_n)


if __name__ == "__main__":
    main()
