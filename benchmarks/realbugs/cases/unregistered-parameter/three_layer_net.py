import torch

torch.manual_seed(0)

D_in, H, D_out = 10, 8, 2


class ThreeLayerNet(torch.nn.Module):
    def __init__(self, D_in, H, D_out):
        super(ThreeLayerNet, self).__init__()

    def forward(self, x):
        h_relu = torch.nn.Linear(D_in, H)(x).clamp(min=0)
        h_relu = torch.nn.Linear(H, H)(h_relu).clamp(min=0)
        y_pred = torch.nn.Linear(H, D_out)(h_relu)
        return y_pred


x = torch.randn(16, D_in)
y = torch.randn(16, D_out)
model = ThreeLayerNet(D_in, H, D_out)
criterion = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
for t in range(5):
    y_pred = model(x)
    loss = criterion(y_pred, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
