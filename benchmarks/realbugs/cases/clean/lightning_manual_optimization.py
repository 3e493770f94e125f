import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class LightningModule(nn.Module):
    """The part of the LightningModule API that a manual-optimization loop uses."""

    def __init__(self):
        super().__init__()
        self.automatic_optimization = True
        self._optimizers = []
        self.logged = {}

    def optimizers(self):
        return self._optimizers if len(self._optimizers) > 1 else self._optimizers[0]

    def manual_backward(self, loss, *args, **kwargs):
        loss.backward(*args, **kwargs)

    def toggle_optimizer(self, optimizer):
        params = {id(p) for group in optimizer.param_groups for p in group["params"]}
        self._requires_grad_state = {}
        for opt in self._optimizers:
            for group in opt.param_groups:
                for p in group["params"]:
                    self._requires_grad_state[p] = p.requires_grad
                    p.requires_grad = id(p) in params

    def untoggle_optimizer(self, optimizer):
        for p, state in self._requires_grad_state.items():
            p.requires_grad = state
        self._requires_grad_state = {}

    def log(self, name, value, prog_bar=False):
        self.logged[name] = value


class Trainer:
    def __init__(self, max_epochs):
        self.max_epochs = max_epochs

    def fit(self, model, train_dataloaders):
        model._optimizers = list(model.configure_optimizers())
        model.train()
        for epoch in range(self.max_epochs):
            for batch_idx, batch in enumerate(train_dataloaders):
                model.training_step(batch, batch_idx)
            print(epoch, {k: round(v, 4) for k, v in model.logged.items()})


class Generator(nn.Module):
    def __init__(self, latent_dim, img_dim):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(latent_dim, 32), nn.LeakyReLU(0.2, inplace=True),
                                   nn.Linear(32, img_dim), nn.Tanh())

    def forward(self, z):
        return self.model(z)


class Discriminator(nn.Module):
    def __init__(self, img_dim):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(img_dim, 32), nn.LeakyReLU(0.2, inplace=True),
                                   nn.Linear(32, 1), nn.Sigmoid())

    def forward(self, img):
        return self.model(img)


class GAN(LightningModule):
    def __init__(self, latent_dim=8, img_dim=16, lr=0.0002):
        super().__init__()
        self.automatic_optimization = False
        self.latent_dim = latent_dim
        self.lr = lr
        self.generator = Generator(latent_dim, img_dim)
        self.discriminator = Discriminator(img_dim)

    def forward(self, z):
        return self.generator(z)

    def adversarial_loss(self, y_hat, y):
        return nn.functional.binary_cross_entropy(y_hat, y)

    def training_step(self, batch, batch_idx):
        imgs, _ = batch
        optimizer_g, optimizer_d = self.optimizers()

        z = torch.randn(imgs.shape[0], self.latent_dim).type_as(imgs)

        self.toggle_optimizer(optimizer_g)
        self.generated_imgs = self(z)
        valid = torch.ones(imgs.size(0), 1).type_as(imgs)
        g_loss = self.adversarial_loss(self.discriminator(self(z)), valid)
        self.log("g_loss", g_loss.item(), prog_bar=True)
        self.manual_backward(g_loss)
        optimizer_g.step()
        optimizer_g.zero_grad()
        self.untoggle_optimizer(optimizer_g)

        self.toggle_optimizer(optimizer_d)
        valid = torch.ones(imgs.size(0), 1).type_as(imgs)
        real_loss = self.adversarial_loss(self.discriminator(imgs), valid)
        fake = torch.zeros(imgs.size(0), 1).type_as(imgs)
        fake_loss = self.adversarial_loss(self.discriminator(self(z).detach()), fake)
        d_loss = (real_loss + fake_loss) / 2
        self.log("d_loss", d_loss.item(), prog_bar=True)
        self.manual_backward(d_loss)
        optimizer_d.step()
        optimizer_d.zero_grad()
        self.untoggle_optimizer(optimizer_d)

    def configure_optimizers(self):
        lr = self.lr
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=lr, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=lr, betas=(0.5, 0.999))
        return [opt_g, opt_d]


torch.manual_seed(0)
dm = DataLoader(TensorDataset(torch.rand(32, 16) * 2 - 1, torch.zeros(32)), batch_size=8, shuffle=True)
model = GAN()
trainer = Trainer(max_epochs=2)
trainer.fit(model, dm)
