import math
import torch
import torch.nn as nn

torch.manual_seed(0)
BATCH_SIZE = 8
MAX_EPOCHS = 2
INIT_LR = 0.001


def my_loss(classifier, regression, points, mode):
    alpha = 0.5
    MSE = nn.MSELoss()
    MSEl = MSE(regression, points)
    cross_entropy = nn.CrossEntropyLoss()
    ce = cross_entropy(classifier, mode)
    loss = ce * alpha + MSEl * (1 - alpha)
    return loss, MSEl, ce


def direction_performance(pred, label):
    pred_angle = math.atan2(pred[0][3] - pred[0][1], pred[0][0] - pred[0][2])
    act_angle = math.atan2(label[0][3] - label[0][1], label[0][0] - label[0][2])
    start = math.hypot(pred[0][2] - label[0][2], pred[0][3] - label[0][3])
    end = math.hypot(pred[0][0] - label[0][0], pred[0][1] - label[0][1])
    return (pred_angle - act_angle) * 180 / math.pi, start, end


class LYTNet(nn.Module):
    def __init__(self):
        super(LYTNet, self).__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU6(inplace=True),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc1 = nn.Linear(8, 5)
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        x = self.features(x)
        return self.fc1(x), self.fc2(x)


train_dataloader = [{'image': torch.rand(BATCH_SIZE, 3, 16, 16), 'mode': torch.randint(0, 5, (BATCH_SIZE,)),
                     'points': torch.rand(BATCH_SIZE, 4)} for _ in range(4)]
net = LYTNet()
loss_fn = my_loss
optimizer = torch.optim.Adam(net.parameters(), lr=INIT_LR, weight_decay=0.000005)
train_losses = []
train_MSE = []
train_CE = []

for epoch in range(MAX_EPOCHS):
    net.train()
    running_loss = 0.0
    running_loss_MSE = 0.0
    running_loss_cross_entropy = 0.0
    angle_error = 0.0
    train_correct = 0
    train_total = 0
    for j, data in enumerate(train_dataloader, 0):
        optimizer.zero_grad()
        train_total += 1
        images = data['image'].type(torch.FloatTensor)
        mode = data['mode']
        points = data['points']
        pred_classes, pred_direc = net(images)
        _, predicted = torch.max(pred_classes, 1)
        train_correct += (predicted == mode).sum().item()
        loss, MSE, cross_entropy = loss_fn(pred_classes, pred_direc, points, mode)
        angle, start, end = direction_performance(pred_direc, points)
        angle_error += angle
        loss.backward()
        optimizer.step()
        running_loss += loss
        running_loss_MSE += MSE
        running_loss_cross_entropy += cross_entropy
    print('Epoch: ' + str(epoch + 1))
    print('Average training loss: ' + str(running_loss / (j + 1)))
    train_MSE.append(running_loss_MSE / train_total)
    train_CE.append(running_loss_cross_entropy / train_total)
    train_losses.append(running_loss / train_total)
