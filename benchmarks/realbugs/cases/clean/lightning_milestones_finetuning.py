import os

import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.optim.lr_scheduler import MultiStepLR
from torch.optim.optimizer import Optimizer
from torch.utils.data import DataLoader, TensorDataset

from lightning.pytorch import LightningDataModule, LightningModule, Trainer, seed_everything
from lightning.pytorch.callbacks.finetuning import BaseFinetuning



class MilestonesFinetuning(BaseFinetuning):
    def __init__(self, milestones: tuple = (1, 2), train_bn: bool = False):
        super().__init__()
        self.milestones = milestones
        self.train_bn = train_bn

    def freeze_before_training(self, pl_module: LightningModule):
        self.freeze(modules=pl_module.feature_extractor, train_bn=self.train_bn)

    def finetune_function(self, pl_module: LightningModule, epoch: int, optimizer: Optimizer):
        if epoch == self.milestones[0]:
            self.unfreeze_and_add_param_group(
                modules=pl_module.feature_extractor[-3:], optimizer=optimizer, train_bn=self.train_bn
            )
        elif epoch == self.milestones[1]:
            self.unfreeze_and_add_param_group(
                modules=pl_module.feature_extractor[:-3], optimizer=optimizer, train_bn=self.train_bn
            )


class CatDogImageDataModule(LightningDataModule):
    def __init__(self, batch_size: int = 8, num_workers: int = 0):
        super().__init__()
        self._batch_size = batch_size
        self._num_workers = num_workers

    def setup(self, stage=None):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(32, 3, 16, 16, generator=g)
        y = (x.mean(dim=(1, 2, 3)) > 0).long()
        self.train_dataset = TensorDataset(x[:24], y[:24])
        self.valid_dataset = TensorDataset(x[24:], y[24:])

    def train_dataloader(self):
        return DataLoader(self.train_dataset, batch_size=self._batch_size, num_workers=self._num_workers, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.valid_dataset, batch_size=self._batch_size, num_workers=self._num_workers)


class TransferLearningModel(LightningModule):
    def __init__(self, milestones: tuple = (1, 2), batch_size: int = 8, lr: float = 1e-3,
                 lr_scheduler_gamma: float = 1e-1, num_workers: int = 0, **kwargs) -> None:
        super().__init__()
        self.milestones = milestones
        self.batch_size = batch_size
        self.lr = lr
        self.lr_scheduler_gamma = lr_scheduler_gamma
        self.num_workers = num_workers

        self.__build_model()
        self.save_hyperparameters()

    def __build_model(self):
        _layers = [
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        ]
        self.feature_extractor = nn.Sequential(*_layers)

        _fc_layers = [nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 8), nn.Linear(8, 1)]
        self.fc = nn.Sequential(*_fc_layers)

        self.loss_func = F.binary_cross_entropy_with_logits

    def forward(self, x):
        x = self.feature_extractor(x)
        x = x.squeeze(-1).squeeze(-1)
        x = self.fc(x)
        return x

    def loss(self, logits, labels):
        return self.loss_func(input=logits, target=labels)

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_logits = self.forward(x)
        y_scores = torch.sigmoid(y_logits)
        y_true = y.view((-1, 1)).type_as(x)

        train_loss = self.loss(y_logits, y_true)
        self.log("train_acc", ((y_scores > 0.5).int() == y_true.int()).float().mean(), prog_bar=True)
        return train_loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        y_logits = self.forward(x)
        y_scores = torch.sigmoid(y_logits)
        y_true = y.view((-1, 1)).type_as(x)

        self.log("val_loss", self.loss(y_logits, y_true), prog_bar=True)
        self.log("val_acc", ((y_scores > 0.5).int() == y_true.int()).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        parameters = list(self.parameters())
        trainable_parameters = list(filter(lambda p: p.requires_grad, parameters))
        print(f"The model will start training with only {len(trainable_parameters)} "
              f"trainable parameters out of {len(parameters)}.")
        optimizer = optim.Adam(trainable_parameters, lr=self.lr)
        scheduler = MultiStepLR(optimizer, milestones=self.milestones, gamma=self.lr_scheduler_gamma)
        return [optimizer], [scheduler]


if __name__ == "__main__":
    seed_everything(0)
    model = TransferLearningModel(milestones=(1, 2))
    datamodule = CatDogImageDataModule(batch_size=8)
    trainer = Trainer(
        max_epochs=3,
        accelerator="cpu",
        devices=1,
        callbacks=[MilestonesFinetuning(milestones=(1, 2))],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(model, datamodule=datamodule)
    print(trainer.callback_metrics)
