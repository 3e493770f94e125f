import torch
import torch.nn as nn

torch.manual_seed(0)

device = torch.device("cpu")


class LIFNeuron(nn.Module):
    def __init__(self, batch_size, dim_in, Rd=5.0e3, Cm=3.0e-6, Rs=1.5, Vth=0.8, V_reset=0.0, dt=1.0e-6):
        super().__init__()
        self.batch_size = batch_size
        self.dim_in = tuple(dim_in)
        self.rd = Rd
        self.cm = Cm
        self.rs = Rs
        self.vth = Vth
        self.v_reset = V_reset
        self.v = torch.full([self.batch_size, *self.dim_in], self.v_reset, dtype=torch.float, device=device)
        self.dt = dt
        self.tau_in = 1 / (self.cm * self.rs)
        self.tau_lk = 1 / (self.cm) * (1 / self.rd + 1 / self.rs)

    @staticmethod
    def soft_spike(x):
        a = 2.0
        return torch.sigmoid(a * x)

    def spiking(self):
        spike = self.soft_spike(self.v - self.vth)
        self.v = self.v * (1 - spike) + self.v_reset * spike
        return spike

    def forward(self, v_in):
        self.v = self.v + self.dt * (self.tau_in * v_in - self.tau_lk * self.v)
        return self.spiking()


class SNN(nn.Module):
    def __init__(self, batch_size, T=4):
        super().__init__()
        self.T = T
        self.fc1 = nn.Linear(16, 10)
        self.lif1 = LIFNeuron(batch_size, [10])

    def forward(self, x):
        spike_rate = 0
        for t in range(self.T):
            spike_rate = spike_rate + self.lif1(self.fc1(x))
        return spike_rate / self.T


batch_size = 4
net = SNN(batch_size)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
criterion = nn.MSELoss()

for epoch in range(3):
    img = torch.rand(batch_size, 16)
    label = torch.nn.functional.one_hot(torch.randint(0, 10, (batch_size,)), 10).float()
    optimizer.zero_grad()
    out_fr = net(img)
    loss = criterion(out_fr, label)
    loss.backward()
    optimizer.step()
