import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())
        self.classifier = nn.Linear(16, 4)

    def forward(self, x):
        return self.classifier(self.backbone(x))


loader = DataLoader(TensorDataset(torch.randn(48, 12), torch.randint(0, 4, (48,))), batch_size=12, shuffle=True)
model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def run_epoch():
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    return loss.item()


print("all layers", run_epoch())

# freeze the backbone; the optimizer was built earlier and still lists its parameters,
# they just get no gradient and so are skipped by step()
model.backbone.requires_grad_(False)
print("head only", run_epoch())

# a new auxiliary head, trained together with the old one from here on
model.aux = nn.Linear(16, 4)
optimizer.add_param_group({"params": model.aux.parameters(), "lr": 0.01})
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        feats = model.backbone(x)
        loss = criterion(model.classifier(feats), y) + 0.5 * criterion(model.aux(feats), y)
        loss.backward()
        optimizer.step()
    print("with aux", epoch, loss.item())

# unfreeze the last backbone layer for the final epoch
for p in model.backbone[2].parameters():
    p.requires_grad_(True)
print("last block unfrozen", run_epoch())
