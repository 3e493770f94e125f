import torch
import torch.nn as nn
import torch.nn.functional as F


class DepthDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ELU())
        self.decoder = nn.Sequential(nn.Conv2d(8, 1, 3, padding=1), nn.Sigmoid())

    def forward(self, x):
        disp = self.decoder(self.encoder(x))
        return {("disp", 0): F.interpolate(disp, scale_factor=2, mode="bilinear", align_corners=False)}


class Trainer:
    def __init__(self):
        self.models = {"depth": DepthDecoder()}
        self.parameters_to_train = list(self.models["depth"].parameters())
        self.model_optimizer = torch.optim.Adam(self.parameters_to_train, 1e-4)
        self.train_loader = [{"color": torch.rand(2, 3, 16, 16), "depth_gt": torch.rand(2, 1, 16, 16)}
                             for _ in range(2)]
        self.val_loader = [{"color": torch.rand(2, 3, 16, 16), "depth_gt": torch.rand(2, 1, 16, 16)}]
        self.val_iter = iter(self.val_loader)
        self.step = 0

    def set_train(self):
        for m in self.models.values():
            m.train()

    def set_eval(self):
        for m in self.models.values():
            m.eval()

    def process_batch(self, inputs):
        outputs = self.models["depth"](inputs["color"])
        losses = {"loss": F.l1_loss(outputs[("disp", 0)], inputs["depth_gt"])}
        return outputs, losses

    def run_epoch(self):
        self.set_train()
        for batch_idx, inputs in enumerate(self.train_loader):
            outputs, losses = self.process_batch(inputs)
            self.model_optimizer.zero_grad()
            losses["loss"].backward()
            self.model_optimizer.step()
            if batch_idx % 2 == 1:
                self.val()
            self.step += 1

    def val(self):
        self.set_eval()
        try:
            inputs = next(self.val_iter)
        except StopIteration:
            self.val_iter = iter(self.val_loader)
            inputs = next(self.val_iter)
        with torch.no_grad():
            outputs, losses = self.process_batch(inputs)
            self.model_optimizer.zero_grad()
            losses["loss"].backward()
            self.model_optimizer.step()
        self.set_train()


torch.manual_seed(0)
trainer = Trainer()
for epoch in range(2):
    trainer.run_epoch()
