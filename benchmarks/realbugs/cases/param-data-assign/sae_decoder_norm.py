import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SAE(nn.Module):
    def __init__(self, input_size, n_dict_components):
        super(SAE, self).__init__()
        self.encoder = nn.Sequential(nn.Linear(input_size, n_dict_components, bias=True), nn.ReLU())
        self.decoder = nn.Linear(n_dict_components, input_size, bias=True)
        self.n_dict_components = n_dict_components
        self.input_size = input_size

    def forward(self, x):
        self.decoder.weight.data = F.normalize(self.decoder.weight.data, dim=0)
        c = self.encoder(x)
        x_hat = self.decoder(c)
        return x_hat, c


sae = SAE(input_size=8, n_dict_components=16)
optimizer = torch.optim.Adam(sae.parameters(), lr=1e-3)
for step in range(10):
    acts = torch.randn(32, 8)
    x_hat, c = sae(acts)
    loss = F.mse_loss(x_hat, acts) + 1e-3 * c.abs().sum(-1).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
