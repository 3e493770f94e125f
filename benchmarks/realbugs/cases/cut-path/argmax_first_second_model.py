import torch
import torch.nn as nn

torch.manual_seed(0)


class FirstModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        return self.fc(x)


class SecondModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1, 1)

    def forward(self, x):
        return self.fc(x)


first_model = FirstModel()
second_model = SecondModel()
params = list(first_model.parameters()) + list(second_model.parameters())
optimizer = torch.optim.SGD(params, lr=0.1)
criterion = nn.MSELoss()

x = torch.randn(8, 6)
target = torch.randn(8, 1)


def main():
    for it in range(3):
        y_p = first_model(x)
        y_p = torch.max(y_p, 1)[1]
        out = second_model(y_p.float().unsqueeze(1))
        loss = criterion(out, target)

        first_model.zero_grad()
        second_model.zero_grad()
        loss.backward()  # retain_variables=True

        for param in second_model.parameters():
            print('data: ', param.data)
            print('grad data: ', param.grad.data)

        for param in first_model.parameters():
            print('data: ', param.data)
            print('grad data: ', param.grad.data)

        optimizer.step()


if __name__ == "__main__":
    main()
