import torch
import torch.nn as nn
import torch.nn.utils.parametrize as parametrize
from torch.nn.utils.parametrizations import orthogonal, spectral_norm, weight_norm


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class MatrixExponential(nn.Module):
    def forward(self, X):
        return torch.matrix_exp(X)


class Skew(nn.Module):
    def forward(self, X):
        A = X.triu(1)
        return A - A.transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu(1)


torch.manual_seed(0)
layer = nn.Linear(3, 3)
parametrize.register_parametrization(layer, "weight", Symmetric())
A = layer.weight
assert torch.allclose(A, A.T)

layer_orthogonal = nn.Linear(3, 3)
parametrize.register_parametrization(layer_orthogonal, "weight", Skew())
parametrize.register_parametrization(layer_orthogonal, "weight", MatrixExponential())

model = nn.Sequential(
    layer,
    nn.Tanh(),
    layer_orthogonal,
    nn.Tanh(),
    orthogonal(nn.Linear(3, 3)),
    nn.ReLU(),
    spectral_norm(nn.Linear(3, 8)),
    nn.ReLU(),
    weight_norm(nn.Linear(8, 2)),
)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
X = torch.randn(32, 3)
Y = torch.randint(0, 2, (32,))

for step in range(30):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(X), Y)
    loss.backward()
    optimizer.step()

model.eval()
with parametrize.cached():
    with torch.no_grad():
        out = model(X)
Q = model[4].weight
print(loss.item(), torch.dist(Q.T @ Q, torch.eye(3)).item() < 1e-4, out.shape)
parametrize.remove_parametrizations(layer, "weight")
print(torch.allclose(layer.weight, layer.weight.T))
