import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def linear_beta_schedule(timesteps):
    beta_start = 0.0001
    beta_end = 0.02
    return torch.linspace(beta_start, beta_end, timesteps)


timesteps = 50
betas = linear_beta_schedule(timesteps=timesteps)
alphas = 1. - betas
alphas_cumprod = torch.cumprod(alphas, axis=0)
alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.0)
sqrt_recip_alphas = torch.sqrt(1.0 / alphas)
sqrt_alphas_cumprod = torch.sqrt(alphas_cumprod)
sqrt_one_minus_alphas_cumprod = torch.sqrt(1. - alphas_cumprod)
posterior_variance = betas * (1. - alphas_cumprod_prev) / (1. - alphas_cumprod)


def extract(a, t, x_shape):
    batch_size = t.shape[0]
    out = a.gather(-1, t.cpu())
    return out.reshape(batch_size, *((1,) * (len(x_shape) - 1))).to(t.device)


def q_sample(x_start, t, noise=None):
    if noise is None:
        noise = torch.randn_like(x_start)
    sqrt_alphas_cumprod_t = extract(sqrt_alphas_cumprod, t, x_start.shape)
    sqrt_one_minus_alphas_cumprod_t = extract(sqrt_one_minus_alphas_cumprod, t, x_start.shape)
    return sqrt_alphas_cumprod_t * x_start + sqrt_one_minus_alphas_cumprod_t * noise


class SinusoidalPositionEmbeddings(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, time):
        half_dim = self.dim // 2
        embeddings = math.log(10000) / (half_dim - 1)
        embeddings = torch.exp(torch.arange(half_dim, device=time.device) * -embeddings)
        embeddings = time[:, None] * embeddings[None, :]
        return torch.cat((embeddings.sin(), embeddings.cos()), dim=-1)


class Unet(nn.Module):
    def __init__(self, dim, channels=1):
        super().__init__()
        self.time_mlp = nn.Sequential(SinusoidalPositionEmbeddings(dim), nn.Linear(dim, dim), nn.GELU())
        self.init_conv = nn.Conv2d(channels, dim, 3, padding=1)
        self.block = nn.Conv2d(dim, dim, 3, padding=1)
        self.norm = nn.GroupNorm(4, dim)
        self.final_conv = nn.Conv2d(dim, channels, 1)

    def forward(self, x, time):
        h = self.init_conv(x)
        h = h + self.time_mlp(time)[:, :, None, None]
        h = F.silu(self.norm(self.block(h)))
        return self.final_conv(h)


def p_losses(denoise_model, x_start, t, noise=None, loss_type="huber"):
    if noise is None:
        noise = torch.randn_like(x_start)
    x_noisy = q_sample(x_start=x_start, t=t, noise=noise)
    predicted_noise = denoise_model(x_noisy, t)
    if loss_type == 'l1':
        loss = F.l1_loss(noise, predicted_noise)
    elif loss_type == 'l2':
        loss = F.mse_loss(noise, predicted_noise)
    elif loss_type == "huber":
        loss = F.smooth_l1_loss(noise, predicted_noise)
    else:
        raise NotImplementedError()
    return loss


@torch.no_grad()
def p_sample(model, x, t, t_index):
    betas_t = extract(betas, t, x.shape)
    sqrt_one_minus_alphas_cumprod_t = extract(sqrt_one_minus_alphas_cumprod, t, x.shape)
    sqrt_recip_alphas_t = extract(sqrt_recip_alphas, t, x.shape)
    model_mean = sqrt_recip_alphas_t * (x - betas_t * model(x, t) / sqrt_one_minus_alphas_cumprod_t)
    if t_index == 0:
        return model_mean
    posterior_variance_t = extract(posterior_variance, t, x.shape)
    noise = torch.randn_like(x)
    return model_mean + torch.sqrt(posterior_variance_t) * noise


@torch.no_grad()
def p_sample_loop(model, shape):
    img = torch.randn(shape)
    for i in reversed(range(0, timesteps)):
        img = p_sample(model, img, torch.full((shape[0],), i, dtype=torch.long), i)
    return img


image_size = 8
channels = 1
model = Unet(dim=8, channels=channels)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
dataloader = [{"pixel_values": torch.rand(4, channels, image_size, image_size) * 2 - 1} for _ in range(4)]

for epoch in range(2):
    for step, batch in enumerate(dataloader):
        optimizer.zero_grad()
        batch_size = batch["pixel_values"].shape[0]
        batch = batch["pixel_values"]
        t = torch.randint(0, timesteps, (batch_size,)).long()
        loss = p_losses(model, batch, t, loss_type="huber")
        if step % 2 == 0:
            print("Loss:", loss.item())
        loss.backward()
        optimizer.step()

samples = p_sample_loop(model, shape=(2, channels, image_size, image_size))
print(samples.shape)
