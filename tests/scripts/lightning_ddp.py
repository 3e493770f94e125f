"""Lightning's DDP strategy on two CPU processes with graphguard's callback (issue 30, item 3).

    python lightning_ddp.py unused ROOT   # aux_head built, never called: DDP's unused-parameter error
    python lightning_ddp.py clean ROOT    # the auxiliary loss is part of the loss
"""
import sys

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from graphguard.integrations.lightning import GraphGuardCallback


class TwoHeads(L.LightningModule):
    def __init__(self, use_aux):
        super().__init__()
        self.use_aux = use_aux
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 2)
        self.aux_head = nn.Linear(16, 2)  # the layer the unused variant never calls

    def training_step(self, batch, batch_idx):
        x, y = batch
        h = torch.relu(self.body(x))
        loss = nn.functional.cross_entropy(self.head(h), y)
        if self.use_aux:
            loss = loss + 0.1 * self.aux_head(h).pow(2).mean()
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


if __name__ == "__main__":
    variant, root = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_steps=4, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        default_root_dir=root, callbacks=[GraphGuardCallback(fail_on="error")])
    trainer.fit(TwoHeads(use_aux=variant == "clean"), DataLoader(data, batch_size=8))
