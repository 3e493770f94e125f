import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


class TinyResNet(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)


class ClassBlock(nn.Module):
    def __init__(self, input_dim, class_num, num_bottleneck=32):
        super(ClassBlock, self).__init__()
        self.add_block = nn.Sequential(nn.Linear(input_dim, num_bottleneck), nn.BatchNorm1d(num_bottleneck), nn.LeakyReLU(0.1))
        self.classifier = nn.Linear(num_bottleneck, class_num)

    def forward(self, x):
        return self.classifier(self.add_block(x))


class ft_net(nn.Module):
    def __init__(self, class_num):
        super(ft_net, self).__init__()
        model_ft = TinyResNet()
        self.model = model_ft
        self.classifier = ClassBlock(16, class_num)

    def forward(self, x):
        x = self.model.conv1(x)
        x = self.model.bn1(x)
        x = self.model.relu(x)
        x = self.model.layer1(x)
        x = self.model.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


model = ft_net(class_num=6)
criterion = nn.CrossEntropyLoss()
ignored_params = list(map(id, model.model.fc.parameters())) + list(map(id, model.classifier.parameters()))
base_params = filter(lambda p: id(p) not in ignored_params, model.parameters())
optimizer_ft = optim.SGD([
    {'params': base_params, 'lr': 0.01},
    {'params': model.model.fc.parameters(), 'lr': 0.1},
    {'params': model.classifier.parameters(), 'lr': 0.1},
], weight_decay=5e-4, momentum=0.9, nesterov=True)

for step in range(4):
    inputs = torch.randn(8, 3, 8, 8)
    labels = torch.randint(0, 6, (8,))
    optimizer_ft.zero_grad()
    outputs = model(inputs)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer_ft.step()
