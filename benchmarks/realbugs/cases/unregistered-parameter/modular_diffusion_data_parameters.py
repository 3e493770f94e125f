from dataclasses import dataclass, field
from itertools import chain
from typing import Iterator, Optional

import torch
import torch.nn as nn
from torch import Tensor
from torch.optim import Adam

torch.manual_seed(0)


@dataclass
class Data:
    w: Tensor
    y: Optional[Tensor] = None
    batch: int = 1

    def parameters(self) -> Iterator[nn.Parameter]:
        return chain.from_iterable(
            var.parameters() for var in vars(self) if isinstance(var, nn.Module))

    def __iter__(self):
        if self.y is None:
            self.y = torch.zeros(self.w.shape[0], dtype=torch.int)
        return zip(self.w.split(self.batch), self.y.split(self.batch))


@dataclass
class Embedding(Data):
    count: Optional[int] = None
    dimension: Optional[int] = None

    def __post_init__(self) -> None:
        self.embedding = nn.Embedding(self.count, self.dimension)

    def encode(self, w: Tensor) -> Tensor:
        return self.embedding(w)

    def decode(self, x: Tensor) -> Tensor:
        return torch.cdist(x, self.embedding.weight).argmin(-1)


@dataclass
class Gaussian:
    steps: int = 20

    def schedule(self):
        self.alpha = torch.cumprod(1 - torch.linspace(1e-4, 0.2, self.steps + 1), 0)

    def prior(self, x: Tensor, t: Tensor):
        a = self.alpha[t].view(-1, *([1] * (x.dim() - 1)))
        epsilon = torch.randn_like(x)
        return a.sqrt() * x + (1 - a).sqrt() * epsilon, epsilon


class Net(nn.Module):
    def __init__(self, dimension, steps):
        super().__init__()
        self.time = nn.Embedding(steps + 1, dimension)
        self.mlp = nn.Sequential(nn.Linear(dimension, 32), nn.SiLU(), nn.Linear(32, dimension))

    def forward(self, x: Tensor, y: Tensor, t: Tensor) -> Tensor:
        return self.mlp(x + self.time(t)[:, None])


@dataclass
class Model:
    data: Data
    noise: Gaussian
    net: Net
    optimizer: Optional[torch.optim.Optimizer] = None
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @torch.no_grad()
    def __post_init__(self):
        self.noise.schedule()
        parameters = chain(self.data.parameters(), self.net.parameters())
        if self.optimizer is None:
            self.optimizer = Adam(parameters, lr=1e-3)
        self.net = self.net.to(self.device)
        for name, value in vars(self.data).items():
            if isinstance(value, nn.Module):
                setattr(self.data, name, value.to(self.device))

    @torch.enable_grad()
    def train(self, epochs: int = 1) -> Iterator[float]:
        self.net.train()
        for _ in range(epochs):
            for w, y in self.data:
                x = self.data.encode(w)
                t = torch.randint(1, self.noise.steps + 1, (x.shape[0],))
                z, epsilon = self.noise.prior(x, t)
                hat = self.net(z, y, t)
                l = ((hat - epsilon) ** 2).mean()
                self.optimizer.zero_grad()
                l.backward()
                self.optimizer.step()
            yield l.item()


w = torch.randint(0, 12, (32, 8))
model = Model(
    data=Embedding(w=w, batch=8, count=12, dimension=6),
    noise=Gaussian(steps=20),
    net=Net(6, 20),
)
for epoch, loss in enumerate(model.train(epochs=2)):
    print(epoch, loss)
