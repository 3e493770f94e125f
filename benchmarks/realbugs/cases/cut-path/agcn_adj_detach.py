import math

import torch
import torch.nn as nn
from torch.nn import Parameter

torch.manual_seed(0)
num_classes = 10


def gen_adj_new(A):
    A = torch.softmax(A, dim=1)
    D = torch.pow(A.sum(1).float(), -0.5)
    D = torch.diag(D)
    adj = torch.matmul(torch.matmul(A, D).t(), D)
    return adj


class NONLocalBlock1D(nn.Module):
    def __init__(self, in_channels, inter_channels=None):
        super(NONLocalBlock1D, self).__init__()
        self.in_channels = in_channels
        self.inter_channels = inter_channels
        if self.inter_channels is None:
            self.inter_channels = in_channels // 2
        self.theta = nn.Conv1d(in_channels=self.in_channels, out_channels=self.inter_channels,
                               kernel_size=1, stride=1, padding=0)
        self.phi = nn.Conv1d(in_channels=self.in_channels, out_channels=self.inter_channels,
                             kernel_size=1, stride=1, padding=0)

    def forward(self, x):
        batch_size = x.size(0)
        theta_x = self.theta(x).view(batch_size, self.inter_channels, -1)
        theta_x = theta_x.squeeze(2)
        phi_x = self.phi(x).view(batch_size, self.inter_channels, -1)
        phi_x = phi_x.squeeze(2).transpose(0, 1)
        f = torch.matmul(theta_x, phi_x)
        N = f.size(-1)
        f_div_C = f / N
        return f_div_C


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=False):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.Tensor(in_features, out_features))
        if bias:
            self.bias = Parameter(torch.Tensor(1, 1, out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.matmul(input, self.weight)
        output = torch.matmul(adj, support)
        return output


class GCNResnet(nn.Module):
    def __init__(self, num_classes, in_channel=16):
        super(GCNResnet, self).__init__()
        self.features = nn.Sequential(nn.Linear(24, 32), nn.ReLU())
        self.num_classes = num_classes
        self.non_local_C1 = NONLocalBlock1D(in_channel)
        self.gc1 = GraphConvolution(in_channel, 24)
        self.gc2 = GraphConvolution(24, 32)
        self.activate = nn.LeakyReLU(0.2)

    def forward(self, feature, inp):
        feature = self.features(feature)
        inp = inp[0]
        inp1 = inp.unsqueeze(2)
        adj = self.non_local_C1(inp1)
        A1 = torch.eye(num_classes, num_classes).float()
        A1 = torch.autograd.Variable(A1)
        adj = adj + A1
        adj = gen_adj_new(adj).detach()
        x = self.gc1(inp, adj)
        x = self.activate(x)
        x = self.gc2(x, adj)
        x = x.transpose(0, 1)
        x = torch.matmul(feature, x)
        return x, adj.unsqueeze(0), A1.unsqueeze(0)

    def get_config_optim(self, lr, lrp):
        return [
            {'params': self.features.parameters(), 'lr': lr * lrp},
            {'params': self.non_local_C1.parameters(), 'lr': lr},
            {'params': self.gc1.parameters(), 'lr': lr},
            {'params': self.gc2.parameters(), 'lr': lr},
        ]


model = GCNResnet(num_classes)
criterion = nn.MultiLabelSoftMarginLoss()
optimizer = torch.optim.SGD(model.get_config_optim(0.1, 0.1), lr=0.1, momentum=0.9)
word_vec = torch.randn(1, num_classes, 16)
images = torch.randn(32, 24)
labels = (torch.rand(32, num_classes) > 0.7).float()

for i in range(4):
    feature = images[i * 8:(i + 1) * 8]
    target = labels[i * 8:(i + 1) * 8]
    output, adj, A = model(feature, word_vec)
    loss = criterion(output, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(i, loss.item())
