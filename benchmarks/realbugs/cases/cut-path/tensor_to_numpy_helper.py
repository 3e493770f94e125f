import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)


def pytorch_tensor_to_numpy(tensor):
    return tensor.detach().cpu().numpy()


def numpy_to_pytorch_tensor(array):
    return torch.from_numpy(array)


class Segmenter(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
        self.decoder = nn.Linear(16, 2)

    def forward(self, x):
        features = self.encoder(x)
        features = pytorch_tensor_to_numpy(features)
        features = np.maximum(features, 0.0) / (np.abs(features).max() + 1e-8)
        features = numpy_to_pytorch_tensor(features.astype(np.float32))
        return self.decoder(features)


def train(model, optimizer, data, labels, num_epochs=3):
    criterion = nn.CrossEntropyLoss()
    for epoch in range(num_epochs):
        optimizer.zero_grad()
        loss = criterion(model(data), labels)
        loss.backward()
        optimizer.step()
        print(epoch, loss.item())


model = Segmenter()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(32, 10)
labels = torch.randint(0, 2, (32,))
train(model, optimizer, data, labels)
