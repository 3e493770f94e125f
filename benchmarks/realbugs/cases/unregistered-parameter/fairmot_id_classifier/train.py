from types import SimpleNamespace

import torch

from mot import MotTrainer, TinyDLA

torch.manual_seed(0)

opt = SimpleNamespace(reid_dim=16, nID=12, lr=1e-3, heads={"hm": 1, "id": 16})
model = TinyDLA(opt.heads)
optimizer = torch.optim.Adam(model.parameters(), opt.lr)
trainer = MotTrainer(opt, model, optimizer)

data_loader = [
    {"input": torch.randn(4, 3, 8, 8), "hm": torch.rand(4, 1, 8, 8), "ids": torch.randint(0, opt.nID, (4,))}
    for _ in range(4)
]
for epoch in range(2):
    trainer.run_epoch(data_loader)
