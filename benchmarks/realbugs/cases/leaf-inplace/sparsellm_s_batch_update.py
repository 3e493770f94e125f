import torch
import torch.nn.functional as F

torch.manual_seed(0)
in_features, out_features, nsamples = 12, 8, 20
W = torch.randn(out_features, in_features)
next_W = torch.randn(4, out_features)
inps = torch.randn(in_features, nsamples)
z = torch.randn(4, nsamples)
s = (W @ inps).to(dtype=torch.float16)

alpha, beta, gamma = 1.0, 5.0, 5.0
s_learning_rate = 0.01
chunk_size = 8


def update_s(s, W, inps, z, num_iters=3):
    for start in range(0, nsamples, chunk_size):
        chunk = torch.arange(start, min(start + chunk_size, nsamples))
        s_batch = s[:, chunk].to(dtype=torch.float32).requires_grad_(True)
        pre = W @ inps[:, chunk]
        for _ in range(num_iters):
            loss_s = beta * (s_batch - pre).pow(2).sum() \
                + gamma * (next_W @ F.relu(s_batch) - z[:, chunk]).pow(2).sum()
            loss_s.backward()
            s_batch -= s_learning_rate * s_batch.grad
            s_batch.grad.zero_()
        s[:, chunk] = s_batch.detach().to(dtype=torch.float16)
    return s


for it in range(2):
    s = update_s(s, W, inps, z)
    print(it, float((W @ inps - s.float()).pow(2).mean()))
