import torch
import torch.nn as nn

torch.manual_seed(0)


class Trial:
    def __init__(self, model, optimizer, criterion=None, callbacks=()):
        self.model = model
        self.optimizer = optimizer
        if criterion is None:
            def criterion(state):
                return torch.zeros(1, device=state['device'])
        self.criterion = criterion
        self.callbacks = list(callbacks)

    def fit(self, x, epochs=2):
        state = {'device': 'cpu'}
        for epoch in range(epochs):
            self.optimizer.zero_grad()
            state['y_pred'] = self.model(x)
            state['loss'] = self.criterion(state)
            for callback in self.callbacks:
                callback(state)
            state['loss'].backward()
            self.optimizer.step()


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(10, 3)
        self.dec = nn.Linear(3, 10)

    def forward(self, x):
        return self.dec(torch.relu(self.enc(x)))


model = AutoEncoder()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
trial = Trial(model, optimizer)
trial.fit(torch.randn(16, 10))
