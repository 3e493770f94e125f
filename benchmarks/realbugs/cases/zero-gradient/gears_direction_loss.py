import torch
import torch.nn as nn

torch.manual_seed(0)


def loss_fct(pred, y, perts, ctrl, direction_lambda=1e-3):
    gamma = 2
    losses = torch.tensor(0.0, requires_grad=True)
    for p in set(perts):
        pert_idx = [i for i, q in enumerate(perts) if q == p]
        pred_p = pred[pert_idx]
        y_p = y[pert_idx]
        losses = losses + torch.sum((pred_p - y_p) ** (2 + gamma)) / pred_p.shape[0] / pred_p.shape[1]
        losses = losses + torch.sum(direction_lambda *
                                    (torch.sign(y_p - ctrl) -
                                     torch.sign(pred_p - ctrl)) ** 2) / pred_p.shape[0] / pred_p.shape[1]
    return losses / len(set(perts))


class GEARS_Model(nn.Module):
    def __init__(self, num_genes=10, hidden_size=16):
        super().__init__()
        self.encoder = nn.Linear(num_genes + 1, hidden_size)
        self.decoder = nn.Linear(hidden_size, num_genes)

    def forward(self, x, pert):
        h = torch.relu(self.encoder(torch.cat([x, pert], dim=1)))
        return x + self.decoder(h)


model = GEARS_Model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
ctrl = torch.rand(10)
x = ctrl.repeat(12, 1)
pert = torch.randint(0, 3, (12, 1)).float()
perts = [str(int(p)) for p in pert.squeeze(1)]
y = ctrl + torch.randn(12, 10) * 0.5

for epoch in range(3):
    optimizer.zero_grad()
    pred = model(x, pert)
    loss = loss_fct(pred, y, perts, ctrl, direction_lambda=1.0)
    loss.backward()
    optimizer.step()
    print(epoch, loss.item())
