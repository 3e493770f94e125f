import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def ensure_tuple(x):
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


class ComposerClassifier(nn.Module):
    def __init__(self, num_features=10, num_classes=4):
        super().__init__()
        self.module = nn.Sequential(nn.Linear(num_features, 32), nn.ReLU(), nn.Linear(32, num_classes))

    def forward(self, batch):
        inputs, _ = batch
        return self.module(inputs)

    def loss(self, outputs, batch):
        _, targets = batch
        return F.cross_entropy(outputs, targets), 0.01 * outputs.pow(2).mean()


class State:
    def __init__(self, model, optimizers):
        self.model = model
        self.optimizers = optimizers
        self.loss = None
        self.outputs = None


class Trainer:
    def __init__(self, model, optimizer):
        self.state = State(model, [optimizer])

    def _train_microbatch(self, microbatch, current_batch_size):
        microbatch_num_samples = microbatch[0].shape[0]
        self.state.outputs = self.state.model(microbatch)
        self.state.loss = self.state.model.loss(self.state.outputs, microbatch)

        total_loss = 0.0
        for loss in ensure_tuple(self.state.loss):
            loss.mul_(microbatch_num_samples / current_batch_size)
            total_loss += loss.item()

        for loss in ensure_tuple(self.state.loss):
            loss.backward()
        return total_loss

    def fit(self, dataloader):
        for batch in dataloader:
            for optimizer in self.state.optimizers:
                optimizer.zero_grad()
            total_loss = self._train_microbatch(batch, batch[0].shape[0])
            for optimizer in self.state.optimizers:
                optimizer.step()
            print(total_loss)


model = ComposerClassifier()
trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
train_dataloader = [(torch.randn(8, 10), torch.randint(0, 4, (8,))) for _ in range(3)]
trainer.fit(train_dataloader)
