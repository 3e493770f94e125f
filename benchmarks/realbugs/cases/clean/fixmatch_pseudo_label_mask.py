import math
from copy import deepcopy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import LambdaLR


class Args:
    lr = 0.1
    wdecay = 5e-4
    nesterov = True
    mu = 3
    T = 1.0
    threshold = 0.6
    lambda_u = 1.0
    use_ema = True
    ema_decay = 0.999
    eval_step = 8
    epochs = 5
    batch_size = 8
    device = 'cpu'


args = Args()


def get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, num_cycles=7. / 16., last_epoch=-1):
    def _lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        no_progress = float(current_step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
        return max(0., math.cos(math.pi * num_cycles * no_progress))
    return LambdaLR(optimizer, _lr_lambda, last_epoch)


def interleave(x, size):
    s = list(x.shape)
    return x.reshape([-1, size] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])


def de_interleave(x, size):
    s = list(x.shape)
    return x.reshape([size, -1] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])


class ModelEMA(object):
    def __init__(self, args, model, decay):
        self.ema = deepcopy(model)
        self.ema.eval()
        self.decay = decay
        self.ema_has_module = hasattr(self.ema, 'module')
        self.param_keys = [k for k, _ in self.ema.named_parameters()]
        self.buffer_keys = [k for k, _ in self.ema.named_buffers()]
        for p in self.ema.parameters():
            p.requires_grad_(False)

    def update(self, model):
        needs_module = hasattr(model, 'module') and not self.ema_has_module
        with torch.no_grad():
            msd = model.state_dict()
            esd = self.ema.state_dict()
            for k in self.param_keys:
                if needs_module:
                    j = 'module.' + k
                else:
                    j = k
                model_v = msd[j].detach()
                ema_v = esd[k]
                esd[k].copy_(ema_v * self.decay + (1. - self.decay) * model_v)

            for k in self.buffer_keys:
                if needs_module:
                    j = 'module.' + k
                else:
                    j = k
                esd[k].copy_(msd[j])


class WideBlockNet(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16, momentum=0.001)
        self.relu = nn.LeakyReLU(negative_slope=0.1, inplace=True)
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = F.adaptive_avg_pool2d(out, 1).view(-1, 16)
        return self.fc(out)


torch.manual_seed(5)
templates = torch.rand(4, 3, 8, 8)
labeled_y = torch.arange(4).repeat(8)
labeled_x = templates[labeled_y] + 0.1 * torch.randn(32, 3, 8, 8)
unlabeled_y = torch.randint(0, 4, (96,))
unlabeled_x = templates[unlabeled_y] + 0.1 * torch.randn(96, 3, 8, 8)


def weak(x):
    return x + 0.02 * torch.randn_like(x)


def strong(x):
    keep = (torch.rand(x.shape[0], 1, 8, 8) > 0.25).float()
    return x * keep + 0.1 * torch.randn_like(x)


model = WideBlockNet(num_classes=4)
no_decay = ['bias', 'bn']
grouped_parameters = [
    {'params': [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)], 'weight_decay': args.wdecay},
    {'params': [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], 'weight_decay': 0.0}
]
optimizer = optim.SGD(grouped_parameters, lr=args.lr, momentum=0.9, nesterov=args.nesterov)
scheduler = get_cosine_schedule_with_warmup(optimizer, 0, args.epochs * args.eval_step)
ema_model = ModelEMA(args, model, args.ema_decay)

model.zero_grad()
mask_probs = []
for epoch in range(args.epochs):
    model.train()
    for batch_idx in range(args.eval_step):
        li = torch.randint(0, 32, (args.batch_size,))
        ui = torch.randint(0, 96, (args.batch_size * args.mu,))
        inputs_x, targets_x = weak(labeled_x[li]), labeled_y[li]
        inputs_u_w, inputs_u_s = weak(unlabeled_x[ui]), strong(unlabeled_x[ui])
        batch_size = inputs_x.shape[0]
        inputs = interleave(torch.cat((inputs_x, inputs_u_w, inputs_u_s)), 2 * args.mu + 1).to(args.device)
        targets_x = targets_x.to(args.device)
        logits = model(inputs)
        logits = de_interleave(logits, 2 * args.mu + 1)
        logits_x = logits[:batch_size]
        logits_u_w, logits_u_s = logits[batch_size:].chunk(2)
        del logits

        Lx = F.cross_entropy(logits_x, targets_x, reduction='mean')

        pseudo_label = torch.softmax(logits_u_w.detach() / args.T, dim=-1)
        max_probs, targets_u = torch.max(pseudo_label, dim=-1)
        mask = max_probs.ge(args.threshold).float()

        Lu = (F.cross_entropy(logits_u_s, targets_u, reduction='none') * mask).mean()

        loss = Lx + args.lambda_u * Lu
        loss.backward()

        optimizer.step()
        scheduler.step()
        if args.use_ema:
            ema_model.update(model)
        model.zero_grad()
        mask_probs.append(mask.mean().item())

model.eval()
with torch.no_grad():
    acc = (model(unlabeled_x).argmax(1) == unlabeled_y).float().mean().item()
print('loss', loss.item(), 'unlabeled acc', acc, 'mask rate', sum(mask_probs[-8:]) / 8)
