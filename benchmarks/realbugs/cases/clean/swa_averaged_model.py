import torch
import torch.nn as nn
from torch.optim.swa_utils import AveragedModel, SWALR, get_ema_multi_avg_fn
from torch.optim.lr_scheduler import CosineAnnealingLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(inplace=True), nn.Linear(32, 3))
loader = DataLoader(TensorDataset(torch.randn(48, 8), torch.randint(0, 3, (48,))), batch_size=12, shuffle=True)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = CosineAnnealingLR(optimizer, T_max=4)
swa_model = AveragedModel(model)
ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
swa_start = 2
swa_scheduler = SWALR(optimizer, swa_lr=0.05)

for epoch in range(4):
    for input, target in loader:
        optimizer.zero_grad()
        loss_fn(model(input), target).backward()
        optimizer.step()
        ema_model.update_parameters(model)
    if epoch > swa_start:
        swa_model.update_parameters(model)
        swa_scheduler.step()
    else:
        scheduler.step()

torch.optim.swa_utils.update_bn(loader, swa_model)
torch.optim.swa_utils.update_bn(loader, ema_model)

swa_model.eval()
ema_model.eval()
with torch.no_grad():
    test_input = torch.randn(8, 8)
    print(swa_model(test_input).argmax(1), ema_model(test_input).argmax(1))
