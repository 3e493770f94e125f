import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Unet1D(nn.Module):
    def __init__(self, dim=8, channels=1):
        super().__init__()
        self.init_conv = nn.Conv1d(channels, dim, 3, padding=1)
        self.time_mlp = nn.Linear(1, dim)
        self.final_conv = nn.Conv1d(dim, channels, 3, padding=1)

    def forward(self, x, time):
        h = self.init_conv(x)
        h = h + self.time_mlp(time.float()[:, None])[:, :, None]
        return self.final_conv(F.silu(h))


class GaussianDiffusion1D(nn.Module):
    def __init__(self, model, seq_length, timesteps=10):
        super().__init__()
        self.model = model
        self.seq_length = seq_length
        self.num_timesteps = timesteps
        betas = torch.linspace(1e-4, 0.02, timesteps)
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.register_buffer("sqrt_alphas_cumprod", alphas_cumprod.sqrt())
        self.register_buffer("sqrt_one_minus_alphas_cumprod", (1.0 - alphas_cumprod).sqrt())

    def forward(self, img):
        b = img.shape[0]
        t = torch.randint(0, self.num_timesteps, (b,))
        noise = torch.randn_like(img)
        x = self.sqrt_alphas_cumprod[t][:, None, None] * img + self.sqrt_one_minus_alphas_cumprod[t][:, None, None] * noise
        model_out = self.model(x, t)
        return F.mse_loss(model_out, noise)


class Trainer1D:
    def __init__(self, diffusion_model, dataset, train_batch_size=4, train_lr=1e-3, train_num_steps=5):
        self.model = diffusion_model
        self.ds = dataset
        self.batch_size = train_batch_size
        self.train_num_steps = train_num_steps
        self.opt = torch.optim.Adam(diffusion_model.parameters(), lr=train_lr)
        self.step = 0

    def train(self):
        while self.step < self.train_num_steps:
            idx = torch.randint(0, self.ds.shape[0], (self.batch_size,))
            data = self.ds[idx]
            loss = self.model(data)
            loss.backward()
            self.opt.step()
            self.opt.zero_grad()
            self.step += 1


raw_signals = torch.randn(16, 6, 32)
conv1D = nn.Conv1d(6, 1, kernel_size=1)
training_seq = conv1D(raw_signals)

model = Unet1D(dim=8, channels=1)
diffusion = GaussianDiffusion1D(model, seq_length=32, timesteps=10)
trainer = Trainer1D(diffusion, training_seq)
trainer.train()
