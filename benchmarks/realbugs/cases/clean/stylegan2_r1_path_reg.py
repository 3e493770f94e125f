import math
import random

import torch
from torch import nn, autograd, optim
from torch.nn import functional as F
from torch.utils import data


class Generator(nn.Module):
    def __init__(self, size, style_dim, n_mlp, n_latent=4):
        super().__init__()
        self.size = size
        self.style_dim = style_dim
        self.n_latent = n_latent
        layers = []
        for i in range(n_mlp):
            layers += [nn.Linear(style_dim, style_dim), nn.LeakyReLU(0.2)]
        self.style = nn.Sequential(*layers)
        self.const = nn.Parameter(torch.randn(1, 8, 4, 4))
        self.mods = nn.ModuleList([nn.Linear(style_dim, 8) for _ in range(n_latent)])
        self.convs = nn.ModuleList([nn.Conv2d(8, 8, 3, padding=1) for _ in range(n_latent - 1)])
        self.to_rgb = nn.Conv2d(8, 3, 1)

    def forward(self, styles, return_latents=False, truncation=1, truncation_latent=None):
        styles = [self.style(s) for s in styles]
        if len(styles) < 2:
            latent = styles[0].unsqueeze(1).repeat(1, self.n_latent, 1)
        else:
            inject_index = random.randint(1, self.n_latent - 1)
            latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
            latent2 = styles[1].unsqueeze(1).repeat(1, self.n_latent - inject_index, 1)
            latent = torch.cat([latent, latent2], 1)

        out = self.const.repeat(latent.shape[0], 1, 1, 1)
        out = out * self.mods[0](latent[:, 0]).view(-1, 8, 1, 1)
        for i, conv in enumerate(self.convs):
            out = F.interpolate(out, scale_factor=2) if out.shape[-1] < self.size else out
            out = F.leaky_relu(conv(out * self.mods[i + 1](latent[:, i + 1]).view(-1, 8, 1, 1)), 0.2)
        image = self.to_rgb(out)

        if return_latents:
            return image, latent
        else:
            return image, None


class Discriminator(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.convs = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.LeakyReLU(0.2),
            nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.LeakyReLU(0.2),
        )
        self.final_linear = nn.Sequential(nn.Linear(16 * (size // 4) ** 2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def forward(self, input):
        out = self.convs(input)
        return self.final_linear(out.view(out.shape[0], -1))


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def accumulate(model1, model2, decay=0.999):
    par1 = dict(model1.named_parameters())
    par2 = dict(model2.named_parameters())
    for k in par1.keys():
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


def sample_data(loader):
    while True:
        for batch in loader:
            yield batch


def d_logistic_loss(real_pred, fake_pred):
    real_loss = F.softplus(-real_pred)
    fake_loss = F.softplus(fake_pred)
    return real_loss.mean() + fake_loss.mean()


def d_r1_loss(real_pred, real_img):
    grad_real, = autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    grad_penalty = grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()
    return grad_penalty


def g_nonsaturating_loss(fake_pred):
    return F.softplus(-fake_pred).mean()


def g_path_regularize(fake_img, latents, mean_path_length, decay=0.01):
    noise = torch.randn_like(fake_img) / math.sqrt(fake_img.shape[2] * fake_img.shape[3])
    grad, = autograd.grad(outputs=(fake_img * noise).sum(), inputs=latents, create_graph=True)
    path_lengths = torch.sqrt(grad.pow(2).sum(2).mean(1))
    path_mean = mean_path_length + decay * (path_lengths.mean() - mean_path_length)
    path_penalty = (path_lengths - path_mean).pow(2).mean()
    return path_penalty, path_mean.detach(), path_lengths


def make_noise(batch, latent_dim, n_noise, device):
    if n_noise == 1:
        return torch.randn(batch, latent_dim, device=device)
    noises = torch.randn(n_noise, batch, latent_dim, device=device).unbind(0)
    return noises


def mixing_noise(batch, latent_dim, prob, device):
    if prob > 0 and random.random() < prob:
        return make_noise(batch, latent_dim, 2, device)
    else:
        return [make_noise(batch, latent_dim, 1, device)]


class Args:
    iter = 6
    batch = 4
    latent = 16
    size = 16
    mixing = 0.9
    r1 = 10
    path_regularize = 2
    path_batch_shrink = 2
    d_reg_every = 2
    g_reg_every = 2
    lr = 0.002
    start_iter = 0


def train(args, loader, generator, discriminator, g_optim, d_optim, g_ema, device):
    loader = sample_data(loader)
    mean_path_length = 0
    r1_loss = torch.tensor(0.0, device=device)
    path_loss = torch.tensor(0.0, device=device)
    path_lengths = torch.tensor(0.0, device=device)
    mean_path_length_avg = 0
    loss_dict = {}
    g_module = generator
    d_module = discriminator
    accum = 0.5 ** (32 / (10 * 1000))

    for idx in range(args.iter):
        i = idx + args.start_iter
        real_img = next(loader)
        real_img = real_img.to(device)

        requires_grad(generator, False)
        requires_grad(discriminator, True)

        noise = mixing_noise(args.batch, args.latent, args.mixing, device)
        fake_img, _ = generator(noise)
        fake_pred = discriminator(fake_img)
        real_pred = discriminator(real_img)
        d_loss = d_logistic_loss(real_pred, fake_pred)

        loss_dict["d"] = d_loss
        loss_dict["real_score"] = real_pred.mean()
        loss_dict["fake_score"] = fake_pred.mean()

        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()

        d_regularize = i % args.d_reg_every == 0
        if d_regularize:
            real_img.requires_grad = True
            real_pred = discriminator(real_img)
            r1_loss = d_r1_loss(real_pred, real_img)

            discriminator.zero_grad()
            (args.r1 / 2 * r1_loss * args.d_reg_every + 0 * real_pred[0]).backward()
            d_optim.step()
        loss_dict["r1"] = r1_loss

        requires_grad(generator, True)
        requires_grad(discriminator, False)

        noise = mixing_noise(args.batch, args.latent, args.mixing, device)
        fake_img, _ = generator(noise)
        fake_pred = discriminator(fake_img)
        g_loss = g_nonsaturating_loss(fake_pred)
        loss_dict["g"] = g_loss

        generator.zero_grad()
        g_loss.backward()
        g_optim.step()

        g_regularize = i % args.g_reg_every == 0
        if g_regularize:
            path_batch_size = max(1, args.batch // args.path_batch_shrink)
            noise = mixing_noise(path_batch_size, args.latent, args.mixing, device)
            fake_img, latents = generator(noise, return_latents=True)

            path_loss, mean_path_length, path_lengths = g_path_regularize(fake_img, latents, mean_path_length)

            generator.zero_grad()
            weighted_path_loss = args.path_regularize * args.g_reg_every * path_loss
            if args.path_batch_shrink:
                weighted_path_loss += 0 * fake_img[0, 0, 0, 0]
            weighted_path_loss.backward()
            g_optim.step()
            mean_path_length_avg = mean_path_length.item()

        loss_dict["path"] = path_loss
        loss_dict["path_length"] = path_lengths.mean()

        accumulate(g_ema, g_module, accum)

        print(f"d: {loss_dict['d'].item():.4f}; g: {loss_dict['g'].item():.4f}; r1: {loss_dict['r1'].item():.4f}; "
              f"path: {loss_dict['path'].item():.4f}; mean path: {mean_path_length_avg:.4f}")


if __name__ == "__main__":
    device = "cpu"
    args = Args()
    random.seed(0)
    torch.manual_seed(0)
    generator = Generator(args.size, args.latent, 2).to(device)
    discriminator = Discriminator(args.size).to(device)
    g_ema = Generator(args.size, args.latent, 2).to(device)
    g_ema.eval()
    accumulate(g_ema, generator, 0)

    g_reg_ratio = args.g_reg_every / (args.g_reg_every + 1)
    d_reg_ratio = args.d_reg_every / (args.d_reg_every + 1)
    g_optim = optim.Adam(generator.parameters(), lr=args.lr * g_reg_ratio, betas=(0 ** g_reg_ratio, 0.99 ** g_reg_ratio))
    d_optim = optim.Adam(discriminator.parameters(), lr=args.lr * d_reg_ratio, betas=(0 ** d_reg_ratio, 0.99 ** d_reg_ratio))

    images = torch.rand(3 * args.batch, 3, args.size, args.size) * 2 - 1
    loader = data.DataLoader(images, batch_size=args.batch, shuffle=True, drop_last=True)
    train(args, loader, generator, discriminator, g_optim, d_optim, g_ema, device)
