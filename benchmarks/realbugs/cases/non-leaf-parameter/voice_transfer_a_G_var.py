import torch
import torch.nn as nn
from torch.autograd import Variable


class RandomCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=(3, 1), stride=1, padding=0)
        self.LeakyReLU = nn.LeakyReLU(0.2)

    def forward(self, x_delta):
        return self.LeakyReLU(self.conv1(x_delta))


def compute_content_loss(a_C, a_G):
    m, n_C, n_H, n_W = a_G.shape
    return ((a_C - a_G) ** 2).sum() / (4 * n_C * n_H * n_W)


def gram(x):
    m, n_C, n_H, n_W = x.shape
    x = x.view(n_C, -1)
    return x @ x.t() / (n_H * n_W)


def compute_layer_style_loss(a_S, a_G):
    return ((gram(a_S) - gram(a_G)) ** 2).sum()


torch.manual_seed(0)
model = RandomCNN().double()
model.eval()
a_C_var = torch.randn(1, 1, 32, 20, dtype=torch.float64)
a_S_var = torch.randn(1, 1, 32, 20, dtype=torch.float64)
a_C = model(a_C_var)
a_S = model(a_S_var)

learning_rate = 0.002
a_G_var = Variable(torch.randn(a_C_var.shape) * 1e-3, requires_grad=True).double()
optimizer = torch.optim.Adam([a_G_var], lr=learning_rate)

style_param = 1
content_param = 1e2
num_epochs = 5
for epoch in range(1, num_epochs + 1):
    optimizer.zero_grad()
    a_G = model(a_G_var)
    content_loss = content_param * compute_content_loss(a_C, a_G)
    style_loss = style_param * compute_layer_style_loss(a_S, a_G)
    loss = content_loss + style_loss
    loss.backward()
    optimizer.step()
    print(epoch, loss.item())
