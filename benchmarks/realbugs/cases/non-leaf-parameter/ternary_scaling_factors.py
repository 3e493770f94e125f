import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc = nn.Linear(8 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def quantize(kernel, w_p, w_n, t):
    delta = t * kernel.abs().max()
    a = (kernel > delta).float()
    b = (kernel < -delta).float()
    return w_p * a + w_n * b


torch.manual_seed(0)
model = LeNet().double()
weights_to_be_quantized = [p for name, p in model.named_parameters() if 'conv' in name and 'weight' in name]
full_precision_copies = [w.data.clone().requires_grad_() for w in weights_to_be_quantized]
scaling_factors = [torch.ones(2, requires_grad=True).to(w) for w in weights_to_be_quantized]

optimizer_main = torch.optim.Adam(model.parameters(), lr=1e-3)
optimizer_fp = torch.optim.Adam(full_precision_copies, lr=1e-3)
optimizer_sf = torch.optim.Adam(scaling_factors, lr=1e-3)

images = torch.randn(8, 1, 14, 14, dtype=torch.float64)
labels = torch.randint(0, 10, (8,))
for step in range(3):
    for w, fp, sf in zip(weights_to_be_quantized, full_precision_copies, scaling_factors):
        w.data = quantize(fp.data, sf[0].item(), -sf[1].item(), 0.05)
    loss = F.cross_entropy(model(images), labels)
    optimizer_main.zero_grad()
    optimizer_sf.zero_grad()
    loss.backward()
    optimizer_sf.step()
