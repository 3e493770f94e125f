import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Expert(nn.Module):
    def __init__(self, n_genes, hidden):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(n_genes, hidden), nn.ReLU())
        self.decoder = nn.Sequential(nn.Linear(hidden, n_genes))


class SharedVAE(nn.Module):
    def __init__(self, hidden, latent):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(hidden, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU())

    def forward(self, x):
        mu, logvar = self.encoder(x).chunk(2, dim=-1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.decoder(z), mu, logvar


class MMVAE(nn.Module):
    def __init__(self, n_genes=20, hidden=16, latent=4):
        super().__init__()
        self.expert = Expert(n_genes, hidden)
        self.shared_vae = SharedVAE(hidden, latent)

    def forward(self, x):
        h = self.expert.encoder(x)
        h, mu, logvar = self.shared_vae(h)
        return self.expert.decoder(h), mu, logvar


class HumanVAETrainer:
    def __init__(self, hparams):
        self.hparams = hparams
        self.model = MMVAE()
        self.configure_optimizers()

    def configure_optimizers(self):
        self.optimizer = torch.optim.Adam([
            { 'params': self.model.expert.encoder.parameters(), 'initial_lr': self.hparams['expert.encoder.optimizer.lr'] },
            { 'params': self.model.expert.decoder.parameters(), 'initial_lr': self.hparams['expert.decoder.optimizer.lr'] },
            { 'params': self.model.shared_vae.encoder.parameters(), 'initial_lr': self.hparams['shr_vae.optimizer.lr'] }
        ], lr=1e-3)

    def train_step(self, train_data):
        self.optimizer.zero_grad()
        x_hat, mu, logvar = self.model(train_data)
        recon_loss = F.mse_loss(x_hat, train_data)
        kl_loss = -0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
        loss = recon_loss + self.hparams['kl_weight'] * kl_loss
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def train(self, epochs):
        for epoch in range(epochs):
            for batch in torch.rand(4, 8, 20).unbind(0):
                self.train_step(batch)


hparams = {'expert.encoder.optimizer.lr': 1e-3, 'expert.decoder.optimizer.lr': 1e-3,
           'shr_vae.optimizer.lr': 1e-3, 'kl_weight': 0.1}
trainer = HumanVAETrainer(hparams)
trainer.train(epochs=2)
