import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ArcMarginProduct(nn.Module):
    def __init__(self, in_features, out_features, s=30.0, m=0.50):
        super().__init__()
        self.s = s
        self.m = m
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        nn.init.xavier_uniform_(self.weight)
        self.cos_m = math.cos(m)
        self.sin_m = math.sin(m)

    def forward(self, input, label):
        cosine = F.linear(F.normalize(input), F.normalize(self.weight))
        sine = torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1))
        phi = cosine * self.cos_m - sine * self.sin_m
        one_hot = torch.zeros(cosine.size())
        one_hot.scatter_(1, label.view(-1, 1).long(), 1)
        output = (one_hot * phi) + ((1.0 - one_hot) * cosine)
        return output * self.s


def resnet_face(feature_dim=32):
    return nn.Sequential(nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, feature_dim))


def load_model(model, device):
    torch.set_grad_enabled(False)
    model.eval()
    return model.to(device)


device = torch.device("cpu")
model = load_model(resnet_face(), device)
metric_fc = ArcMarginProduct(32, 10, s=30, m=0.5)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD([{'params': model.parameters()}, {'params': metric_fc.parameters()}],
                            lr=1e-1, weight_decay=5e-4)

trainloader = [(torch.randn(16, 64), torch.randint(0, 10, (16,))) for _ in range(3)]
max_epoch = 2

for i in range(max_epoch):
    model.train()
    for ii, data in enumerate(trainloader):
        data_input, label = data
        data_input = data_input.to(device)
        label = label.to(device).long()
        feature = model(data_input)
        output = metric_fc(feature, label)
        loss = criterion(output, label)

        loss.requires_grad = True
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        acc = (output.argmax(1) == label).float().mean().item()
        print(i, ii, loss.item(), acc)
