import torch
import torch.nn as nn

torch.manual_seed(0)

X_train = torch.randn(64, 4)
y_train = (X_train[:, 0] > 0).float()


class ClassifierModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_stack = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

    def forward(self, x):
        return self.layer_stack(x)


def accuracy(y_true, y_pred):
    return (y_true == y_pred).float().mean().item() * 100


model = ClassifierModel()
loss_fn = nn.L1Loss()
optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
Epochs = 5

for epoch in range(Epochs):
    model.train()
    train_logits = model(X_train)
    train_preds_probs = torch.softmax(train_logits, dim=1).argmax(dim=1).type(torch.float32)
    loss = loss_fn(train_preds_probs, y_train)
    train_accu = accuracy(y_train, train_preds_probs)
    print(train_preds_probs)
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
