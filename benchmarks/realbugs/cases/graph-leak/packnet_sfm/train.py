import torch

from horovod_trainer import HorovodTrainer
from model import SelfSupModel

torch.manual_seed(0)

dataloader = [{"rgb": torch.rand(2, 3, 8, 8), "depth": torch.rand(2, 1, 8, 8)} for _ in range(5)]
model = SelfSupModel()
trainer = HorovodTrainer()
metrics = trainer.fit(model, dataloader)
