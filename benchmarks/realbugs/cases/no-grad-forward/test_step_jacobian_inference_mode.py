import torch
import torch.nn as nn

torch.manual_seed(0)


class JacobianModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 5))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def _jacobian_check(self):
        with torch.enable_grad():
            N = 5
            f = lambda x: self.net(x) ** 2
            x = torch.randn(N, requires_grad=True)
            y = f(x)
            I_N = torch.eye(N)
            jacobian_rows = [torch.autograd.grad(y, x, v, retain_graph=True, allow_unused=True)[0]
                             for v in I_N.unbind()]
            jacobian = torch.stack(jacobian_rows)
        return jacobian

    def validation_step(self, batch, batch_idx):
        return self._jacobian_check()

    def test_step(self, batch, batch_idx):
        return self._jacobian_check()


class Trainer:
    def __init__(self, max_epochs=1, inference_mode=True):
        self.max_epochs = max_epochs
        self.inference_mode = inference_mode

    def fit(self, model, train_dataloaders, val_dataloaders):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(self.max_epochs):
            model.train()
            for batch_idx, batch in enumerate(train_dataloaders):
                loss = model.training_step(batch, batch_idx)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                for batch_idx, batch in enumerate(val_dataloaders):
                    model.validation_step(batch, batch_idx)

    def test(self, model, dataloaders):
        model.eval()
        context = torch.inference_mode() if self.inference_mode else torch.no_grad()
        with context:
            for batch_idx, batch in enumerate(dataloaders):
                model.test_step(batch, batch_idx)


data = [(torch.randn(8, 5), torch.randn(8, 5)) for _ in range(3)]
model = JacobianModule()
trainer = Trainer(max_epochs=1)
trainer.fit(model, train_dataloaders=data, val_dataloaders=data[:1])
trainer.test(model, dataloaders=data[:1])
