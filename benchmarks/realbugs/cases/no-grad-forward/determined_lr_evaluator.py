import torch
from torch import nn
from torch.optim import Adam

torch.manual_seed(0)


class LRModel(nn.Module):
    def __init__(self, num_features, num_classes):
        super(LRModel, self).__init__()
        self.fc = nn.Linear(num_features, num_classes)
        torch.nn.init.xavier_uniform_(self.fc.weight.data)

    def forward(self, x):
        z = self.fc(x)
        return z


class LREvaluator:
    def __init__(self, num_epochs: int = 20, learning_rate: float = 0.01,
                 weight_decay: float = 0.0, test_interval: int = 10):
        self.num_epochs = num_epochs
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.test_interval = test_interval

    def __call__(self, x, y, split):
        return self.evaluate(x, y, split)

    def evaluate(self, x, y, split):
        device = x.device
        x = x.detach().to(device)
        input_dim = x.size()[1]
        y = y.to(device)
        num_classes = y.max().item() + 1
        classifier = LRModel(input_dim, num_classes).to(device)
        optimizer = Adam(classifier.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay)
        output_fn = nn.LogSoftmax(dim=-1)
        criterion = nn.NLLLoss()

        best_test_micro = 0
        for epoch in range(self.num_epochs):
            classifier.train()
            optimizer.zero_grad()

            output = classifier(x[split['train']])
            loss = criterion(output_fn(output), y[split['train']])

            loss.backward()
            optimizer.step()

            if (epoch + 1) % self.test_interval == 0:
                classifier.eval()
                y_pred = classifier(x[split['test']]).argmax(-1)
                test_micro = (y_pred == y[split['test']]).float().mean().item()
                best_test_micro = max(best_test_micro, test_micro)
        return {'micro_f1': best_test_micro}


class Encoder(nn.Module):
    def __init__(self, in_dim, hid_dim):
        super().__init__()
        self.lin1 = nn.Linear(in_dim, hid_dim)
        self.lin2 = nn.Linear(hid_dim, hid_dim)

    def forward(self, x, edge_index):
        agg = torch.zeros_like(x).index_add_(0, edge_index[1], x[edge_index[0]])
        return self.lin2(torch.relu(self.lin1(x + agg)))


class Batch:
    def __init__(self, num_nodes, in_dim, num_classes):
        self.x = torch.randn(num_nodes, in_dim)
        self.edge_index = torch.randint(0, num_nodes, (2, 4 * num_nodes))
        self.y = torch.randint(0, num_classes, (num_nodes,))


class GCLTrial:
    def __init__(self):
        self.model = Encoder(8, 16)
        self.optimizer = Adam(self.model.parameters(), lr=0.01)
        perm = torch.randperm(40)
        self.split = {'train': perm[:12], 'valid': perm[12:16], 'test': perm[16:]}

    def train_batch(self, batch):
        z1 = self.model(batch.x + 0.1 * torch.randn_like(batch.x), batch.edge_index)
        z2 = self.model(batch.x + 0.1 * torch.randn_like(batch.x), batch.edge_index)
        loss = (1 - torch.cosine_similarity(z1, z2, dim=-1)).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return {"loss": loss.item()}

    def evaluate_batch(self, batch):
        z = self.model(batch.x, batch.edge_index)
        result = LREvaluator()(z, batch.y, self.split)
        return {"micro_f1": result["micro_f1"]}


def run_trial(trial, batches, epochs):
    for epoch in range(epochs):
        trial.model.train()
        for batch in batches:
            metrics = trial.train_batch(batch)
        trial.model.eval()
        with torch.no_grad():
            for batch in batches:
                val_metrics = trial.evaluate_batch(batch)
        print(epoch, metrics, val_metrics)


run_trial(GCLTrial(), [Batch(40, 8, 3)], epochs=2)
