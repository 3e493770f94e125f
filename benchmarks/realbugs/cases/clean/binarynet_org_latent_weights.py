import torch
import torch.nn as nn
import torch.optim as optim


def Binarize(tensor, quant_mode='det'):
    if quant_mode == 'det':
        return tensor.sign()
    return tensor.add_(1).div_(2).add_(torch.rand(tensor.size()).add(-0.5)).clamp_(0, 1).round().mul_(2).add_(-1)


class BinarizeLinear(nn.Linear):

    def __init__(self, *kargs, **kwargs):
        super(BinarizeLinear, self).__init__(*kargs, **kwargs)

    def forward(self, input):
        if input.size(1) != 64:
            input.data = Binarize(input.data)
        if not hasattr(self.weight, 'org'):
            self.weight.org = self.weight.data.clone()
        self.weight.data = Binarize(self.weight.org)
        out = nn.functional.linear(input, self.weight)
        if not self.bias is None:
            self.bias.org = self.bias.data.clone()
            out += self.bias.view(1, -1).expand_as(out)
        return out


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.infl_ratio = 1
        self.fc1 = BinarizeLinear(64, 48 * self.infl_ratio)
        self.htanh1 = nn.Hardtanh()
        self.bn1 = nn.BatchNorm1d(48 * self.infl_ratio)
        self.fc2 = BinarizeLinear(48 * self.infl_ratio, 48 * self.infl_ratio)
        self.htanh2 = nn.Hardtanh()
        self.bn2 = nn.BatchNorm1d(48 * self.infl_ratio)
        self.fc3 = nn.Linear(48 * self.infl_ratio, 4)
        self.logsoftmax = nn.LogSoftmax(dim=1)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        x = x.view(-1, 64)
        x = self.fc1(x)
        x = self.bn1(x)
        x = self.htanh1(x)
        x = self.fc2(x)
        x = self.drop(x)
        x = self.bn2(x)
        x = self.htanh2(x)
        x = self.fc3(x)
        return self.logsoftmax(x)


torch.manual_seed(1)
model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=0.01)
proto = torch.randn(4, 64)
labels = torch.randint(0, 4, (256,))
images = proto[labels] + 0.5 * torch.randn(256, 64)


def train(epoch):
    model.train()
    for batch_idx in range(8):
        data = images[batch_idx * 32:(batch_idx + 1) * 32].clone()
        target = labels[batch_idx * 32:(batch_idx + 1) * 32]
        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        for p in list(model.parameters()):
            if hasattr(p, 'org'):
                p.data.copy_(p.org)
        optimizer.step()
        for p in list(model.parameters()):
            if hasattr(p, 'org'):
                p.org.copy_(p.data.clamp_(-1, 1))
    return loss.item()


def test():
    model.eval()
    with torch.no_grad():
        output = model(images.clone())
        pred = output.data.max(1, keepdim=True)[1]
        return pred.eq(labels.view_as(pred)).sum().item() / len(labels)


first_acc = test()
for epoch in range(1, 5):
    last_loss = train(epoch)
acc = test()
print('loss', last_loss, 'accuracy', first_acc, '->', acc)
