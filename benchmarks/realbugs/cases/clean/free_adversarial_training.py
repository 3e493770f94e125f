import math

import torch
import torch.nn as nn
from torch.autograd import Variable


class Configs:
    class TRAIN:
        lr = 0.05
        momentum = 0.9
        weight_decay = 1e-4
        epochs = 4
        mean = [0.5, 0.5, 0.5]
        std = [0.25, 0.25, 0.25]

    class DATA:
        batch_size = 16
        crop_size = 8
        max_color_value = 255.0

    class ADV:
        n_repeats = 2
        fgsm_step = 4.0
        clip_eps = 4.0


configs = Configs


def fgsm(gradz, step_size):
    return step_size * torch.sign(gradz)


def accuracy(output, target):
    return (output.argmax(1) == target).float().mean() * 100


torch.manual_seed(0)
configs.TRAIN.epochs = int(math.ceil(configs.TRAIN.epochs / configs.ADV.n_repeats))
configs.ADV.fgsm_step /= configs.DATA.max_color_value
configs.ADV.clip_eps /= configs.DATA.max_color_value

model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
    nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(32, 4))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), configs.TRAIN.lr,
                            momentum=configs.TRAIN.momentum,
                            weight_decay=configs.TRAIN.weight_decay)

templates = torch.rand(4, 3, configs.DATA.crop_size, configs.DATA.crop_size)
labels = torch.randint(0, 4, (96,))
images = (templates[labels] + 0.15 * torch.randn(96, 3, 8, 8)).clamp(0, 1)
train_loader = [(images[k:k + 16], labels[k:k + 16]) for k in range(0, 96, 16)]

global_noise_data = torch.zeros([configs.DATA.batch_size, 3, configs.DATA.crop_size, configs.DATA.crop_size])


def train(train_loader, model, criterion, optimizer, epoch):
    global global_noise_data
    mean = torch.Tensor(configs.TRAIN.mean)[:, None, None]
    mean = mean.expand(3, configs.DATA.crop_size, configs.DATA.crop_size)
    std = torch.Tensor(configs.TRAIN.std)[:, None, None]
    std = std.expand(3, configs.DATA.crop_size, configs.DATA.crop_size)
    model.train()
    for i, (input, target) in enumerate(train_loader):
        for j in range(configs.ADV.n_repeats):
            noise_batch = Variable(global_noise_data[0:input.size(0)], requires_grad=True)
            in1 = input + noise_batch
            in1.clamp_(0, 1.0)
            in1.sub_(mean).div_(std)
            output = model(in1)
            loss = criterion(output, target)

            prec1 = accuracy(output, target)

            optimizer.zero_grad()
            loss.backward()

            pert = fgsm(noise_batch.grad, configs.ADV.fgsm_step)
            global_noise_data[0:input.size(0)] += pert.data
            global_noise_data.clamp_(-configs.ADV.clip_eps, configs.ADV.clip_eps)

            optimizer.step()
    return loss.item(), prec1.item()


def validate(model):
    model.eval()
    with torch.no_grad():
        mean = torch.Tensor(configs.TRAIN.mean)[:, None, None]
        std = torch.Tensor(configs.TRAIN.std)[:, None, None]
        return accuracy(model((images - mean) / std), labels).item()


before = validate(model)
for epoch in range(0, configs.TRAIN.epochs + 2):
    loss, prec1 = train(train_loader, model, criterion, optimizer, epoch)
print('clean accuracy', before, '->', validate(model), 'last loss', loss)
