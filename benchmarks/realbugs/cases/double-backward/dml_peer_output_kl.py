import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)


def resnet32(num_classes=10):
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, num_classes))


class Trainer(object):
    def __init__(self, train_loader, model_num=2, lr=0.1):
        self.train_loader = train_loader
        self.model_num = model_num
        self.models = []
        self.optimizers = []
        self.loss_kl = nn.KLDivLoss(reduction='batchmean')
        self.loss_ce = nn.CrossEntropyLoss()
        for i in range(self.model_num):
            model = resnet32()
            self.models.append(model)
            optimizer = optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
            self.optimizers.append(optimizer)

    def train_one_epoch(self, epoch):
        for i in range(self.model_num):
            self.models[i].train()
        for i, (images, labels) in enumerate(self.train_loader):
            outputs = []
            for model in self.models:
                outputs.append(model(images))
            for i in range(self.model_num):
                ce_loss = self.loss_ce(outputs[i], labels)
                kl_loss = 0
                for j in range(self.model_num):
                    if i != j:
                        kl_loss += self.loss_kl(F.log_softmax(outputs[i], dim=1),
                                                F.softmax(outputs[j], dim=1))
                loss = ce_loss + kl_loss / (self.model_num - 1)
                self.optimizers[i].zero_grad()
                loss.backward()
                self.optimizers[i].step()


train_loader = [(torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))) for _ in range(2)]
trainer = Trainer(train_loader)
for epoch in range(1):
    trainer.train_one_epoch(epoch)
