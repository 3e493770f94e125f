import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def gabor_filters(kernel, size, t):
    center, fwhm = kernel[:, 0], kernel[:, 1]
    denominator = 1.0 / (math.sqrt(2.0 * math.pi) * fwhm)
    gaussian = torch.exp(-(t.unsqueeze(0) ** 2) / (2.0 * fwhm.unsqueeze(1) ** 2))
    phase = center.unsqueeze(1) * t.unsqueeze(0)
    real = denominator.unsqueeze(1) * gaussian * torch.cos(phase)
    imag = denominator.unsqueeze(1) * gaussian * torch.sin(phase)
    return real, imag


class GaborConstraint(nn.Module):
    def __init__(self, kernel_size):
        super(GaborConstraint, self).__init__()
        self._kernel_size = kernel_size

    def forward(self, kernel):
        mu_lower = 0.
        mu_upper = math.pi
        sigma_lower = 4 * math.sqrt(2 * math.log(2)) / math.pi
        sigma_upper = self._kernel_size * math.sqrt(2 * math.log(2)) / math.pi
        with torch.no_grad():
            clipped_mu = torch.clamp(kernel[:, 0], mu_lower, mu_upper)
            clipped_sigma = torch.clamp(kernel[:, 1], sigma_lower, sigma_upper)
        return torch.stack([clipped_mu, clipped_sigma], dim=1)


class GaborConv1D(nn.Module):
    def __init__(self, filters, kernel_size, strides, padding):
        super(GaborConv1D, self).__init__()
        self._filters = filters // 2
        self._kernel_size = kernel_size
        self._strides = strides
        self._padding = padding
        initialized_kernel = torch.stack([torch.linspace(0.2, 2.8, self._filters),
                                          torch.full((self._filters,), 6.0)], dim=1)
        self._kernel = nn.Parameter(initialized_kernel)
        self._kernel_constraint = GaborConstraint(self._kernel_size)
        self.register_buffer("gabor_filter_init_t",
                             torch.arange(-(self._kernel_size // 2), (self._kernel_size + 1) // 2, dtype=torch.float32))

    def forward(self, x):
        kernel = self._kernel_constraint(self._kernel)
        real_filters, img_filters = gabor_filters(kernel, self._kernel_size, self.gabor_filter_init_t)
        stacked_filters = torch.stack([real_filters, img_filters], dim=1)
        stacked_filters = stacked_filters.view(2 * self._filters, self._kernel_size)
        stacked_filters = stacked_filters.unsqueeze(1)
        return F.conv1d(x, stacked_filters, stride=self._strides, padding=self._padding)


class Leaf(nn.Module):
    def __init__(self, n_filters=8, window_size=33):
        super(Leaf, self).__init__()
        self._complex_conv = GaborConv1D(2 * n_filters, window_size, 1, window_size // 2)
        self._pooling = nn.Conv1d(n_filters, n_filters, kernel_size=window_size, stride=8,
                                  groups=n_filters, bias=False)

    def forward(self, x):
        outputs = self._complex_conv(x)
        outputs = outputs ** 2
        outputs = outputs.view(outputs.shape[0], -1, 2, outputs.shape[-1]).sum(2)
        outputs = self._pooling(outputs)
        return torch.log(outputs.abs() + 1e-5)


a = Leaf()
x = torch.rand(1, 1, 400)
kernel_before = a._complex_conv._kernel.data.clone()
opt = torch.optim.Adam(a.parameters(), lr=0.002, betas=(0.9, 0.999), eps=1e-08, weight_decay=1e-6, amsgrad=True)
for _ in range(5):
    b = a(x)
    b_gt = torch.ones_like(b)
    loss = torch.norm((b - b_gt).view(1, -1), p=2, dim=-1)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(torch.equal(kernel_before, a._complex_conv._kernel.data))
