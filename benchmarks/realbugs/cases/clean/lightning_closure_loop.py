import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class LitRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(8, 16)
        self.l2 = nn.Linear(16, 1)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(x)
        loss = nn.functional.mse_loss(y_hat, y)
        return loss

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)
        lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        return [optimizer], [lr_scheduler]


def fit(model, data, epochs):
    optimizers, lr_schedulers = model.configure_optimizers()
    model.train()
    for epoch in range(epochs):
        for batch_idx, batch in enumerate(data):
            for opt in optimizers:

                def closure():
                    loss = model.training_step(batch, batch_idx)
                    opt.zero_grad()
                    loss.backward()
                    return loss

                loss = opt.step(closure)
        for lr_scheduler in lr_schedulers:
            lr_scheduler.step()
        print(epoch, loss.item())


torch.manual_seed(0)
X = torch.randn(40, 8)
y = X.sum(1, keepdim=True) * 0.5
data = DataLoader(TensorDataset(X, y), batch_size=8, shuffle=True)
model = LitRegressor()
fit(model, data, epochs=3)
