import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

LRELU_SLOPE = 0.1


def get_padding(kernel_size, dilation=1):
    return int((kernel_size * dilation - dilation) / 2)


class AMPBlock1(torch.nn.Module):
    def __init__(self, channels, kernel_size=3, dilation=(1, 3, 5), rank=0):
        super(AMPBlock1, self).__init__()
        self.convs1 = nn.ModuleList([
            nn.Conv1d(channels, channels, kernel_size, 1, dilation=d, padding=get_padding(kernel_size, d))
            for d in dilation
        ])
        self.convs2 = nn.ModuleList([
            nn.Conv1d(channels, channels, kernel_size, 1, dilation=1, padding=get_padding(kernel_size, 1))
            for _ in dilation
        ])
        self.alpha1 = [nn.Parameter(torch.ones(1, channels, 1).to(rank)) for i in range(len(self.convs1))]
        self.alpha2 = [nn.Parameter(torch.ones(1, channels, 1).to(rank)) for i in range(len(self.convs2))]

    def forward(self, x):
        for c1, c2, a1, a2 in zip(self.convs1, self.convs2, self.alpha1, self.alpha2):
            xt = x + (1 / a1) * (torch.sin(a1 * x) ** 2)
            xt = c1(xt)
            xt = xt + (1 / a2) * (torch.sin(a2 * xt) ** 2)
            xt = c2(xt)
            x = xt + x
        return x


class Generator(torch.nn.Module):
    def __init__(self, num_mels=8, upsample_initial_channel=16):
        super(Generator, self).__init__()
        self.conv_pre = nn.Conv1d(num_mels, upsample_initial_channel, 7, 1, padding=3)
        self.ups = nn.ModuleList([nn.ConvTranspose1d(upsample_initial_channel, upsample_initial_channel // 2, 4, 2, padding=1)])
        self.resblocks = nn.ModuleList([AMPBlock1(upsample_initial_channel // 2, rank='cpu')])
        self.conv_post = nn.Conv1d(upsample_initial_channel // 2, 1, 7, 1, padding=3)

    def forward(self, x):
        x = self.conv_pre(x)
        for up, block in zip(self.ups, self.resblocks):
            x = F.leaky_relu(x, LRELU_SLOPE)
            x = up(x)
            x = block(x)
        x = F.leaky_relu(x)
        x = self.conv_post(x)
        return torch.tanh(x)


generator = Generator()
optim_g = torch.optim.AdamW(generator.parameters(), 2e-4, betas=(0.8, 0.99))

for steps in range(4):
    x = torch.randn(4, 8, 16)
    y = torch.sin(torch.linspace(0, 12.0, 32)).expand(4, 1, 32)
    y_g_hat = generator(x)
    optim_g.zero_grad()
    loss_gen_all = F.l1_loss(y_g_hat, y) * 45
    loss_gen_all.backward()
    optim_g.step()
    print(steps, loss_gen_all.item())
