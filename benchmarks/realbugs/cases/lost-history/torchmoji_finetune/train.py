import torch
import torch.nn as nn
from torch.autograd import Variable

from model_def import TorchMoji

torch.manual_seed(0)


def fit_model(model, loss_op, optim_op, train_gen, epoch_size, nb_epochs):
    for epoch in range(nb_epochs):
        model.train()
        for i, (X_train, y_train) in enumerate(train_gen):
            if i >= epoch_size:
                break
            optim_op.zero_grad()
            output = model(X_train)
            loss = loss_op(output, y_train)
            loss = Variable(loss, requires_grad=True)
            loss.backward()
            optim_op.step()
        print('Epoch {} loss {:.5f}'.format(epoch + 1, loss.item()))


model = TorchMoji(nb_classes=1, nb_tokens=50)
loss_op = nn.BCELoss()
optim_op = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
train_gen = [(torch.randint(0, 50, (8, 10)), torch.randint(0, 2, (8, 1)).float()) for _ in range(3)]
fit_model(model, loss_op, optim_op, train_gen, epoch_size=3, nb_epochs=2)
