import torch
import torch.nn as nn

torch.manual_seed(0)
nz = 8
G = nn.Sequential(nn.Linear(nz, 16), nn.ReLU(), nn.Linear(16, 4))
D = nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
optimG = torch.optim.Adam(G.parameters(), lr=2e-4)
optimD = torch.optim.Adam(D.parameters(), lr=2e-4)
criterion = nn.BCELoss()

real_data = torch.randn(64, 4) * 0.5 + 1.0
batch_size = 16
for epoch in range(2):
    for i in range(0, real_data.size(0), batch_size):
        real = real_data[i:i + batch_size]
        label_real = torch.ones(real.size(0), 1)
        label_fake = torch.zeros(real.size(0), 1)

        t = torch.randn(real.size(0), nz)
        g = G(t)
        d = D(g)

        lossD = criterion(D(real), label_real) + criterion(d, label_fake)
        optimD.zero_grad()
        lossD.backward(retain_graph=True)
        optimD.step()

        lossG = criterion(d, label_real)
        optimG.zero_grad()
        lossG.backward()
        optimG.step()
    print(epoch, lossD.item(), lossG.item())
