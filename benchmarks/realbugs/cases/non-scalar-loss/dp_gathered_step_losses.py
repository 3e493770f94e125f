import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, target = batch
        prediction = self(x)
        loss = F.cross_entropy(prediction, target)
        return {"loss": loss}


def gather(outputs, dim=0):
    return {k: torch.stack([o[k] for o in outputs], dim=dim) for k in outputs[0]}


def dp_training_step(model, batch, batch_idx, num_replicas=2):
    x, target = batch
    shards = zip(x.chunk(num_replicas), target.chunk(num_replicas))
    outputs = [model.training_step(shard, batch_idx) for shard in shards]
    return gather(outputs)


model = Classifier()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = [(torch.randn(8, 10), torch.ones(8, dtype=torch.long)) for _ in range(3)]

for batch_idx, batch in enumerate(data):
    output = dp_training_step(model, batch, batch_idx)
    l = output["loss"]
    optimizer.zero_grad()
    l.backward()
    optimizer.step()
