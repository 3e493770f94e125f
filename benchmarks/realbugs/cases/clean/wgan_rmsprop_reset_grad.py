import torch
import torch.nn
import torch.nn.functional as nn
import torch.optim as optim

torch.manual_seed(0)
mb_size = 8
z_dim = 4
X_dim = 16
h_dim = 16
lr = 1e-4

data = torch.rand(64, X_dim)


def next_batch(it):
    start = (it * mb_size) % data.size(0)
    return data[start:start + mb_size]


G = torch.nn.Sequential(
    torch.nn.Linear(z_dim, h_dim),
    torch.nn.ReLU(),
    torch.nn.Linear(h_dim, X_dim),
    torch.nn.Sigmoid()
)


D = torch.nn.Sequential(
    torch.nn.Linear(X_dim, h_dim),
    torch.nn.ReLU(),
    torch.nn.Linear(h_dim, 1),
)


def reset_grad():
    G.zero_grad()
    D.zero_grad()


G_solver = optim.RMSprop(G.parameters(), lr=lr)
D_solver = optim.RMSprop(D.parameters(), lr=lr)

cnt = 0
for it in range(6):
    for _ in range(5):
        z = torch.randn(mb_size, z_dim)
        X = next_batch(cnt)
        cnt += 1

        G_sample = G(z)
        D_real = D(X)
        D_fake = D(G_sample)

        D_loss = -(torch.mean(D_real) - torch.mean(D_fake))

        D_loss.backward()
        D_solver.step()

        for p in D.parameters():
            p.data.clamp_(-0.01, 0.01)

        reset_grad()

    X = next_batch(cnt)
    z = torch.randn(mb_size, z_dim)

    G_sample = G(z)
    D_fake = D(G_sample)

    G_loss = -torch.mean(D_fake)

    G_loss.backward()
    G_solver.step()

    reset_grad()

    if it % 2 == 0:
        print('Iter-{}; D_loss: {}; G_loss: {}'
              .format(it, D_loss.item(), G_loss.item()))
