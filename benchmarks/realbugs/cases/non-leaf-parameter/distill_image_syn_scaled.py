import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--dlipc", type=int, default=2)
parser.add_argument("--dllr_img", type=float, default=100.0)
parser.add_argument("--dldevice", type=str, default="cpu")
parser.add_argument("--Iteration", type=int, default=3)
args = parser.parse_args([])

torch.manual_seed(0)
num_classes, channel, im_size = 3, 1, (8, 8)
images_real = torch.randn(30, channel, im_size[0], im_size[1])
labels_real = torch.arange(num_classes).repeat_interleave(10)

image_syn = torch.randn(size=(num_classes * args.dlipc, channel, im_size[0], im_size[1]), dtype=torch.float, requires_grad=True, device=args.dldevice) * 0.01
label_syn = torch.arange(num_classes, device=args.dldevice).repeat_interleave(args.dlipc)

optimizer_img = torch.optim.SGD([image_syn, ], lr=args.dllr_img, momentum=0.5)

net = nn.Sequential(nn.Flatten(), nn.Linear(channel * im_size[0] * im_size[1], num_classes))
for it in range(args.Iteration):
    loss = torch.tensor(0.0)
    for c in range(num_classes):
        img_real = images_real[labels_real == c]
        img_syn = image_syn[label_syn == c]
        g_real = torch.autograd.grad(F.cross_entropy(net(img_real), labels_real[labels_real == c]), list(net.parameters()))
        g_syn = torch.autograd.grad(F.cross_entropy(net(img_syn), label_syn[label_syn == c]), list(net.parameters()), create_graph=True)
        loss = loss + sum(((gr.detach() - gs) ** 2).sum() for gr, gs in zip(g_real, g_syn))
    optimizer_img.zero_grad()
    loss.backward()
    optimizer_img.step()
    print(it, loss.item())
