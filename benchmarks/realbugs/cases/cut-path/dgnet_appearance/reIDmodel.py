import torch.nn as nn


class ft_netAB(nn.Module):
    def __init__(self, class_num, in_dim=32, feat_dim=16):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(in_dim, feat_dim), nn.ReLU())
        self.classifier = nn.Linear(feat_dim, class_num)

    def forward(self, x):
        f = self.model(x)
        f = f.detach()
        x = self.classifier(f)
        return f, x
