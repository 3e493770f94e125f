import torch
import torch.nn as nn

torch.manual_seed(0)


def sample_to_cuda(data):
    return data


class SelfSupModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.depth_net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))

    def training_step(self, batch, *args):
        depth = torch.sigmoid(self.depth_net(batch["rgb"]))
        loss = (depth - batch["depth"]).abs().mean()
        return {"loss": loss, "metrics": {"depth_mean": depth.mean().item()}}

    def training_epoch_end(self, output_batch):
        avg_train_loss = torch.stack([x["loss"] for x in output_batch]).mean()
        return {"avg_train-loss": avg_train_loss}


class HorovodTrainer:
    def __init__(self, max_epochs=1):
        self.max_epochs = max_epochs

    def fit(self, module, dataloader):
        optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)
        for epoch in range(self.max_epochs):
            output = self.train(dataloader, module, optimizer)
        return output

    def train(self, dataloader, module, optimizer):
        module.train()
        outputs = []
        for i, batch in enumerate(dataloader):
            optimizer.zero_grad()
            batch = sample_to_cuda(batch)
            output = module.training_step(batch, i)
            output["loss"].backward()
            optimizer.step()
            outputs.append(output)
        return module.training_epoch_end(outputs)


dataloader = [{"rgb": torch.rand(2, 3, 8, 8), "depth": torch.rand(2, 1, 8, 8)} for _ in range(5)]
model = SelfSupModel()
trainer = HorovodTrainer()
metrics = trainer.fit(model, dataloader)
