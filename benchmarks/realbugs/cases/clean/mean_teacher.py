import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(10, 32)
        self.bn1 = nn.BatchNorm1d(32)
        self.dropout = nn.Dropout(0.2)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        x = F.relu(self.bn1(self.fc1(x)))
        return self.fc2(self.dropout(x))


def create_model(ema=False):
    model = Net()
    if ema:
        for param in model.parameters():
            param.detach_()
    return model


def update_ema_variables(model, ema_model, alpha, global_step):
    alpha = min(1 - 1 / (global_step + 1), alpha)
    for ema_param, param in zip(ema_model.parameters(), model.parameters()):
        ema_param.data.mul_(alpha).add_(param.data, alpha=1 - alpha)


def softmax_mse_loss(input_logits, target_logits):
    assert input_logits.size() == target_logits.size()
    input_softmax = F.softmax(input_logits, dim=1)
    target_softmax = F.softmax(target_logits, dim=1)
    num_classes = input_logits.size()[1]
    return F.mse_loss(input_softmax, target_softmax, reduction='sum') / num_classes


torch.manual_seed(0)
NO_LABEL = -1
x = torch.randn(48, 10)
labels = torch.randint(0, 3, (48,))
labels[24:] = NO_LABEL
train_loader = DataLoader(TensorDataset(x, labels), batch_size=12, shuffle=True)

model = create_model()
ema_model = create_model(ema=True)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=2e-4)
class_criterion = nn.CrossEntropyLoss(reduction='sum', ignore_index=NO_LABEL)
consistency_weight = 1.0
ema_decay = 0.99

global_step = 0
for epoch in range(3):
    model.train()
    ema_model.train()
    for i, (input, target) in enumerate(train_loader):
        input_var = input + 0.05 * torch.randn_like(input)
        ema_input_var = input + 0.05 * torch.randn_like(input)
        minibatch_size = len(target)
        labeled_minibatch_size = target.ne(NO_LABEL).sum().item()

        ema_model_out = ema_model(ema_input_var)
        model_out = model(input_var)

        ema_logit = ema_model_out.detach()

        class_loss = class_criterion(model_out, target) / minibatch_size
        consistency_loss = consistency_weight * softmax_mse_loss(model_out, ema_logit) / minibatch_size
        loss = class_loss + consistency_loss

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        global_step += 1
        update_ema_variables(model, ema_model, ema_decay, global_step)
    print(epoch, 'class', class_loss.item(), 'consistency', consistency_loss.item(),
          'labeled', labeled_minibatch_size)
