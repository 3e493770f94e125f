import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)


class SimpleCNN(nn.Module):
    def __init__(self):
        super(SimpleCNN, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 8, 3, 1)
        self.fc1 = nn.Linear(200, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


device = "cpu"
batch_size = 16
data = torch.randn(batch_size, 1, 14, 14, device=device)
targets = torch.randint(10, (batch_size,), device=device)

model = SimpleCNN().to(device=device)
predictions = model(data)
loss = loss_fn(predictions, targets)
loss.backward()


def compute_grad(sample, target):
    sample = sample.unsqueeze(0)
    target = target.unsqueeze(0)
    prediction = model(sample)
    loss = loss_fn(prediction, target)
    return torch.autograd.grad(loss, list(model.parameters()))


def compute_sample_grads(data, targets):
    sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
    sample_grads = zip(*sample_grads)
    sample_grads = [torch.stack(shards) for shards in sample_grads]
    return sample_grads


per_sample_grads = compute_sample_grads(data, targets)

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)
    predictions = functional_call(model, (params, buffers), (batch,))
    loss = loss_fn(predictions, targets)
    return loss


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

for per_sample_grad, ft_per_sample_grad in zip(per_sample_grads, ft_per_sample_grads.values()):
    assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)

optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
max_grad_norm, noise_multiplier = 1.0, 0.5
for step in range(3):
    params = {k: v.detach() for k, v in model.named_parameters()}
    sample_grads = ft_compute_sample_grad(params, buffers, data, targets)
    norms = torch.stack([g.flatten(1).norm(dim=1) for g in sample_grads.values()]).norm(dim=0)
    factor = (max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
    optimizer.zero_grad(set_to_none=True)
    for name, p in model.named_parameters():
        clipped = (sample_grads[name] * factor.view(-1, *([1] * (p.dim())))).sum(0)
        noise = torch.randn_like(p) * noise_multiplier * max_grad_norm
        p.grad = (clipped + noise) / batch_size
    optimizer.step()
    with torch.no_grad():
        print(step, loss_fn(model(data), targets).item())
