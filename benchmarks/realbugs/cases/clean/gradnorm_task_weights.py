import torch
from torch import nn
import torch.nn.functional as F


class GradNorm:
    """GradNorm loss balancing kept apart from the model's own training loop."""

    def __init__(self, layer: nn.Module, alpha: float, number_of_tasks: int, lr: float = None, device: str = "cpu"):
        self.layer = layer
        self.alpha = alpha
        self.T = number_of_tasks
        self.device = torch.device(device)
        self.w_i = torch.nn.Parameter(torch.ones(self.T, device=self.device), requires_grad=True)
        self.L_i_0 = None
        self.lr = lr

    def gradnorm(self, L_i: torch.Tensor, layer: nn.Module = None) -> torch.Tensor:
        if layer is None:
            layer = self.layer

        if self.L_i_0 is None:
            self.L_i_0 = L_i.detach()

        G_W_i = torch.stack([
            torch.autograd.grad(L_i[i] * self.w_i[i], layer.parameters(), retain_graph=True,
                                create_graph=True)[0].norm()
            for i in range(self.T)])
        G_W_bar = torch.mean(G_W_i)

        tilde_L_i = L_i / self.L_i_0
        r_i = tilde_L_i / torch.mean(tilde_L_i)

        target_G_W_i = (G_W_bar * torch.pow(r_i, self.alpha)).detach()
        L_grad = F.l1_loss(G_W_i, target_G_W_i)

        return L_grad

    def apply_grads(self, L_grad: torch.Tensor, lr: float = None) -> torch.Tensor:
        if lr is None:
            lr = self.lr

        self.w_i.grad = torch.autograd.grad(L_grad, self.w_i)[0]
        self.w_i.data -= lr * self.w_i.grad

        self.w_i.data = self.w_i / torch.sum(self.w_i) * self.T

        if torch.any(self.w_i < 0):
            print("Negative w_i values detected. Consider reducing the learning rate.")
            self.w_i.data = torch.clamp(self.w_i.data, min=1e-8)

        return self.w_i


class MultiTaskNet(nn.Module):
    def __init__(self, in_dim, hidden, out_dim, tasks):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.last_shared_layer = nn.Linear(hidden, hidden)
        self.heads = nn.ModuleList([nn.Linear(hidden, out_dim) for _ in range(tasks)])

    def forward(self, x):
        h = torch.relu(self.last_shared_layer(self.trunk(x)))
        return torch.stack([head(h) for head in self.heads], dim=1)


def toy_dataset(n, in_dim, out_dim, scalars):
    B = torch.randn(out_dim, in_dim) * 10 ** 0.5
    eps = [torch.randn(out_dim, in_dim) * 3.5 ** 0.5 for _ in scalars]
    x = torch.randn(n, in_dim)
    y = torch.stack([s * torch.tanh(x @ (B + e).t() / in_dim) for s, e in zip(scalars, eps)], dim=1)
    return x, y


if __name__ == "__main__":
    torch.manual_seed(0)
    device = "cpu"
    T = 2
    x_all, y_all = toy_dataset(96, 25, 10, scalars=[1.0, 10.0])
    dataloader = [(x_all[i:i + 32], y_all[i:i + 32]) for i in range(0, 96, 32)]

    model = MultiTaskNet(25, 32, 10, T).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    gradnorm = GradNorm(model.last_shared_layer, alpha=0.12, number_of_tasks=T, lr=1e-3, device=device)

    for epoch in range(3):
        for x, y_true in dataloader:
            x, y_true = x.to(device), y_true.to(device)

            y_pred = model(x)

            task_losses = F.mse_loss(y_pred, y_true, reduction='none').mean(dim=-1)
            L_i = task_losses.mean(dim=0)

            L = torch.sum(gradnorm.w_i * L_i)

            optimizer.zero_grad()
            L.backward(retain_graph=True)

            L_grad = gradnorm.gradnorm(L_i)
            gradnorm.apply_grads(L_grad)

            optimizer.step()
        print(epoch, L.item(), gradnorm.w_i.data.tolist())
