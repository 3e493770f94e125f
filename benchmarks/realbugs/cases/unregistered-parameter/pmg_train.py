import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)


class BasicConv(nn.Module):
    def __init__(self, in_planes, out_planes, kernel_size, padding=0):
        super(BasicConv, self).__init__()
        self.conv = nn.Conv2d(in_planes, out_planes, kernel_size=kernel_size, padding=padding, bias=False)
        self.bn = nn.BatchNorm2d(out_planes)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class PMG(nn.Module):
    def __init__(self, feature_size, classes_num):
        super(PMG, self).__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.conv_block1 = BasicConv(8, feature_size, 1)
        self.classifier1 = nn.Linear(feature_size, classes_num)
        self.conv_block2 = BasicConv(8, feature_size, 1)
        self.classifier2 = nn.Linear(feature_size, classes_num)
        self.classifier_concat = nn.Linear(2 * feature_size, classes_num)

    def forward(self, x):
        xf = self.features(x)
        xl1 = F.adaptive_max_pool2d(self.conv_block1(xf), 1).flatten(1)
        xl2 = F.adaptive_max_pool2d(self.conv_block2(xf), 1).flatten(1)
        return self.classifier1(xl1), self.classifier2(xl2), self.classifier_concat(torch.cat([xl1, xl2], 1))


net = PMG(feature_size=16, classes_num=5)
CELoss = nn.CrossEntropyLoss()
optimizer = optim.SGD([
    {'params': net.classifier_concat.parameters(), 'lr': 0.002},
    {'params': net.conv_block1.parameters(), 'lr': 0.002},
    {'params': net.classifier1.parameters(), 'lr': 0.002},
    {'params': net.conv_block2.parameters(), 'lr': 0.002},
    {'params': net.classifier2.parameters(), 'lr': 0.002},
], momentum=0.9, weight_decay=5e-4)

for batch_idx in range(4):
    inputs = torch.randn(4, 3, 8, 8)
    targets = torch.randint(0, 5, (4,))
    optimizer.zero_grad()
    output_1, output_2, output_concat = net(inputs)
    loss = CELoss(output_1, targets) + CELoss(output_2, targets) + CELoss(output_concat, targets)
    loss.backward()
    optimizer.step()
