import torch

torch.manual_seed(123)


class MyModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.toy_model = ToyModel(weight=True)
        self.recurrent_layer = torch.nn.GRUCell(3, 3)

    def forward(self, x):
        W = self.recurrent_layer(self.toy_model.weight, self.toy_model.weight)
        self.toy_model.weight = torch.nn.parameter.Parameter(W)
        return self.toy_model(x)


class ToyModel(torch.nn.Module):
    def __init__(self, weight=True):
        super().__init__()
        if weight:
            self.weight = torch.nn.parameter.Parameter(torch.Tensor(2, 3).fill_(0.5))
        else:
            self.register_parameter('weight', None)

    def forward(self, x, weight=None):
        if weight is None:
            weight = self.weight
        return torch.tan(x @ weight)


x = torch.Tensor(1, 2).fill_(0.8)
y = torch.Tensor(1, 3).fill_(0.7)
model = MyModel()
optim = torch.optim.SGD(model.parameters(), lr=1e-2)
for epoch in range(5):
    optim.zero_grad()
    prediction = model(x)
    loss = ((prediction - y) ** 2).sum()
    loss.backward()
    optim.step()
