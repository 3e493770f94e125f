import torch


def sample_to_cuda(data):
    return data


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
