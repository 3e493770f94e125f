import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


def loss_coteaching(y_1, y_2, t, forget_rate, ind, noise_or_not):
    loss_1 = F.cross_entropy(y_1, t, reduction='none')
    ind_1_sorted = np.argsort(loss_1.data)
    loss_1_sorted = loss_1[ind_1_sorted]

    loss_2 = F.cross_entropy(y_2, t, reduction='none')
    ind_2_sorted = np.argsort(loss_2.data)
    loss_2_sorted = loss_2[ind_2_sorted]

    remember_rate = 1 - forget_rate
    num_remember = int(remember_rate * len(loss_1_sorted))

    pure_ratio_1 = np.sum(noise_or_not[ind[ind_1_sorted[:num_remember].numpy()]]) / float(num_remember)
    pure_ratio_2 = np.sum(noise_or_not[ind[ind_2_sorted[:num_remember].numpy()]]) / float(num_remember)

    ind_1_update = ind_1_sorted[:num_remember]
    ind_2_update = ind_2_sorted[:num_remember]
    loss_1_update = F.cross_entropy(y_1[ind_2_update], t[ind_2_update])
    loss_2_update = F.cross_entropy(y_2[ind_1_update], t[ind_1_update])

    return torch.sum(loss_1_update) / num_remember, torch.sum(loss_2_update) / num_remember, pure_ratio_1, pure_ratio_2


class CNN(nn.Module):
    def __init__(self, input_channel=1, n_outputs=4, dropout_rate=0.25):
        super(CNN, self).__init__()
        self.dropout_rate = dropout_rate
        self.c1 = nn.Conv2d(input_channel, 8, kernel_size=3, stride=1, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.l_c1 = nn.Linear(8, n_outputs)

    def forward(self, x):
        h = F.leaky_relu(self.bn1(self.c1(x)), negative_slope=0.01)
        h = F.max_pool2d(h, kernel_size=2, stride=2)
        h = F.dropout2d(h, p=self.dropout_rate, training=self.training)
        h = F.avg_pool2d(h, kernel_size=h.data.shape[2])
        return self.l_c1(h.view(h.size(0), h.size(1)))


torch.manual_seed(1)
np.random.seed(1)
num_classes = 4
noise_rate = 0.2
forget_rate = noise_rate
n_epoch = 6
num_gradual = 2
exponent = 1
learning_rate = 0.01
batch_size = 32

templates = torch.randn(num_classes, 1, 8, 8)
clean_labels = torch.randint(0, num_classes, (256,))
images = templates[clean_labels] + 0.7 * torch.randn(256, 1, 8, 8)
flip = torch.rand(256) < noise_rate
noisy_labels = torch.where(flip, (clean_labels + 1) % num_classes, clean_labels)
noise_or_not = (noisy_labels == clean_labels).numpy()

rate_schedule = np.ones(n_epoch) * forget_rate
rate_schedule[:num_gradual] = np.linspace(0, forget_rate ** exponent, num_gradual)


def train(epoch, model1, optimizer1, model2, optimizer2):
    pure_ratio_1_list = []
    pure_ratio_2_list = []
    perm = torch.randperm(256)
    for i in range(256 // batch_size):
        indexes = perm[i * batch_size:(i + 1) * batch_size]
        ind = indexes.cpu().numpy().transpose()
        images_b = Variable(images[indexes])
        labels_b = Variable(noisy_labels[indexes])

        logits1 = model1(images_b)
        logits2 = model2(images_b)
        loss_1, loss_2, pure_ratio_1, pure_ratio_2 = loss_coteaching(logits1, logits2, labels_b, rate_schedule[epoch], ind, noise_or_not)
        pure_ratio_1_list.append(100 * pure_ratio_1)
        pure_ratio_2_list.append(100 * pure_ratio_2)

        optimizer1.zero_grad()
        loss_1.backward()
        optimizer1.step()
        optimizer2.zero_grad()
        loss_2.backward()
        optimizer2.step()
    return loss_1.data.item(), loss_2.data.item(), np.mean(pure_ratio_1_list), np.mean(pure_ratio_2_list)


def evaluate(model1, model2):
    model1.eval()
    model2.eval()
    with torch.no_grad():
        acc1 = (model1(images).argmax(1) == clean_labels).float().mean().item()
        acc2 = (model2(images).argmax(1) == clean_labels).float().mean().item()
    return acc1, acc2


cnn1 = CNN(input_channel=1, n_outputs=num_classes)
optimizer1 = torch.optim.Adam(cnn1.parameters(), lr=learning_rate)
cnn2 = CNN(input_channel=1, n_outputs=num_classes)
optimizer2 = torch.optim.Adam(cnn2.parameters(), lr=learning_rate)

print('before', evaluate(cnn1, cnn2))
for epoch in range(1, n_epoch):
    cnn1.train()
    cnn2.train()
    stats = train(epoch, cnn1, optimizer1, cnn2, optimizer2)
print('after', evaluate(cnn1, cnn2), stats)
