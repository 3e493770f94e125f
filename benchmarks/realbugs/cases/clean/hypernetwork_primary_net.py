import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parameter import Parameter

torch.manual_seed(0)


class HyperNetwork(nn.Module):
    def __init__(self, f_size=3, z_dim=8, out_size=4, in_size=4):
        super(HyperNetwork, self).__init__()
        self.z_dim = z_dim
        self.f_size = f_size
        self.out_size = out_size
        self.in_size = in_size

        self.w1 = Parameter(torch.fmod(torch.randn((self.z_dim, self.out_size * self.f_size * self.f_size)), 2))
        self.b1 = Parameter(torch.fmod(torch.randn((self.out_size * self.f_size * self.f_size)), 2))

        self.w2 = Parameter(torch.fmod(torch.randn((self.z_dim, self.in_size * self.z_dim)), 2))
        self.b2 = Parameter(torch.fmod(torch.randn((self.in_size * self.z_dim)), 2))

    def forward(self, z):
        h_in = torch.matmul(z, self.w2) + self.b2
        h_in = h_in.view(self.in_size, self.z_dim)
        h_final = torch.matmul(h_in, self.w1) + self.b1
        kernel = h_final.view(self.out_size, self.in_size, self.f_size, self.f_size)
        return kernel


class Embedding(nn.Module):
    def __init__(self, z_num, z_dim):
        super(Embedding, self).__init__()
        self.z_list = nn.ParameterList()
        self.z_num = z_num
        self.z_dim = z_dim
        h, k = self.z_num
        for i in range(h):
            for j in range(k):
                self.z_list.append(Parameter(torch.fmod(torch.randn(self.z_dim), 2)))

    def forward(self, hyper_net):
        ww = []
        h, k = self.z_num
        for i in range(h):
            w = []
            for j in range(k):
                w.append(hyper_net(self.z_list[i * k + j]))
            ww.append(torch.cat(w, dim=1))
        return torch.cat(ww, dim=0)


class ResNetBlock(nn.Module):
    def __init__(self, in_size=4, out_size=4, downsample=False):
        super(ResNetBlock, self).__init__()
        self.out_size = out_size
        self.in_size = in_size
        if downsample:
            self.stride1 = 2
            self.reslayer = nn.Conv2d(in_channels=self.in_size, out_channels=self.out_size, stride=2, kernel_size=1)
        else:
            self.stride1 = 1
            self.reslayer = None
        self.bn1 = nn.BatchNorm2d(out_size)
        self.bn2 = nn.BatchNorm2d(out_size)

    def forward(self, x, conv1_w, conv2_w):
        residual = x
        out = F.relu(self.bn1(F.conv2d(x, conv1_w, stride=self.stride1, padding=1)))
        out = self.bn2(F.conv2d(out, conv2_w, padding=1))
        if self.reslayer:
            residual = self.reslayer(residual)
        out += residual
        out = F.relu(out)
        return out


class PrimaryNetwork(nn.Module):
    def __init__(self, z_dim=8):
        super(PrimaryNetwork, self).__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.z_dim = z_dim
        self.hope = HyperNetwork(z_dim=self.z_dim)
        self.zs_size = [[1, 1], [1, 1], [2, 1], [2, 2]]
        self.filter_size = [[4, 4], [4, 8]]
        self.res_net = nn.ModuleList()
        for i in range(2):
            down_sample = i == 1
            self.res_net.append(ResNetBlock(self.filter_size[i][0], self.filter_size[i][1], downsample=down_sample))
        self.zs = nn.ModuleList()
        for i in range(4):
            self.zs.append(Embedding(self.zs_size[i], self.z_dim))
        self.global_avg = nn.AvgPool2d(4)
        self.final = nn.Linear(8, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        for i in range(2):
            w1 = self.zs[2 * i](self.hope)
            w2 = self.zs[2 * i + 1](self.hope)
            x = self.res_net[i](x, w1, w2)
        x = self.global_avg(x)
        x = self.final(x.view(-1, 8))
        return x


net = PrimaryNetwork()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.002, momentum=0.9, weight_decay=0.0005)
trainloader = [(torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))) for _ in range(4)]

for epoch in range(2):
    running_loss = 0.0
    for i, data in enumerate(trainloader, 0):
        inputs, labels = data
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    print(epoch, running_loss / len(trainloader))
