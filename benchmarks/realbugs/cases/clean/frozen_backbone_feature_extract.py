import copy
import time

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


def set_parameter_requires_grad(model, feature_extracting):
    if feature_extracting:
        for param in model.parameters():
            param.requires_grad_(False)


class SmallVGG(nn.Module):
    def __init__(self, num_classes=1000):
        super(SmallVGG, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(64, 32), nn.ReLU(True), nn.Dropout(), nn.Linear(32, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def initialize_model(num_classes, feature_extract):
    model_ft = SmallVGG()
    set_parameter_requires_grad(model_ft, feature_extract)
    num_ftrs = model_ft.classifier[3].in_features
    model_ft.classifier[3] = nn.Linear(num_ftrs, num_classes)
    input_size = 8
    return model_ft, input_size


def train_model(model, dataloaders, criterion, optimizer, num_epochs=25):
    since = time.time()
    val_acc_history = []
    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0
    for epoch in range(num_epochs):
        for phase in ['train', 'val']:
            if phase == 'train':
                model.train()
            else:
                model.eval()
            running_loss = 0.0
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == 'train'):
                    outputs = model(inputs)
                    loss = criterion(outputs, labels)
                    _, preds = torch.max(outputs, 1)
                    if phase == 'train':
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            epoch_loss = running_loss / len(dataloaders[phase].dataset)
            epoch_acc = running_corrects.double() / len(dataloaders[phase].dataset)
            print('{} Loss: {:.4f} Acc: {:.4f}'.format(phase, epoch_loss, epoch_acc))
            if phase == 'val' and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model.state_dict())
            if phase == 'val':
                val_acc_history.append(epoch_acc)
    print('Training complete in {:.0f}s, best val Acc: {:4f}'.format(time.time() - since, best_acc))
    model.load_state_dict(best_model_wts)
    return model, val_acc_history


torch.manual_seed(0)
num_classes = 2
feature_extract = True
model_ft, input_size = initialize_model(num_classes, feature_extract)
dataloaders_dict = {
    'train': DataLoader(TensorDataset(torch.randn(24, 3, input_size, input_size), torch.randint(0, 2, (24,))),
                        batch_size=8, shuffle=True),
    'val': DataLoader(TensorDataset(torch.randn(16, 3, input_size, input_size), torch.randint(0, 2, (16,))),
                      batch_size=8),
}

params_to_update = model_ft.parameters()
print("Params to learn:")
if feature_extract:
    params_to_update = []
    for name, param in model_ft.named_parameters():
        if param.requires_grad == True:
            params_to_update.append(param)
            print("\t", name)
else:
    for name, param in model_ft.named_parameters():
        if param.requires_grad == True:
            print("\t", name)

optimizer_ft = optim.SGD(params_to_update, lr=0.001, momentum=0.9)
criterion = nn.CrossEntropyLoss()
model_ft, hist = train_model(model_ft, dataloaders_dict, criterion, optimizer_ft, num_epochs=2)
