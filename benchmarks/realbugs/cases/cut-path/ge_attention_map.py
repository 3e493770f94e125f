import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.layer1_0 = self.Conv_Module(3, 6, 1, 3, 1)
        self.layer1_1 = self.Conv_Module(1, 6, 4, 3, 1)
        self.Dense = self.Classification(96)

    def Conv_Module(self, in_filters, out_filters, stride, kernel_size, padding):
        return nn.Sequential(
            nn.Conv2d(in_channels=in_filters, out_channels=out_filters, kernel_size=kernel_size, stride=1, padding=padding),
            nn.ReLU(),
            nn.Conv2d(in_channels=out_filters, out_channels=out_filters, kernel_size=kernel_size, stride=stride, padding=padding),
            nn.ReLU())

    def Classification(self, num_in):
        return nn.Sequential(
            nn.Linear(num_in, 10))

    def forward(self, original_img):
        first_conv = self.layer1_0(original_img)
        attention_map = first_conv.mean(1).unsqueeze(dim=1)
        attention_map = torch.ge(attention_map, attention_map.mean()).float()
        second_conv = self.layer1_1(attention_map)
        out = second_conv.view(second_conv.size(0), -1)
        return self.Dense(out)


net = Net()
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
trainset = [(torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))) for _ in range(4)]

for epoch in range(1):
    running_loss = 0.0
    for i, data in enumerate(trainset, 0):
        inputs, labels = data
        inputs, labels = Variable(inputs), Variable(labels)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    print(running_loss)
