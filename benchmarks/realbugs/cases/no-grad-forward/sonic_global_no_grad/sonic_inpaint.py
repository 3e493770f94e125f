import torch
import torch.nn.functional as F

import nodes
from denoiser import Denoiser


def sonic_inpaint(pipe, image, mask, step_nums=3, lr=0.05):
    epsilon_optim_target = torch.randn_like(image).requires_grad_(True)
    optimizer = torch.optim.Adam([epsilon_optim_target], lr=lr)
    for step in range(step_nums):
        t = 1.0 - step / step_nums
        x_t = (1 - t) * image + t * epsilon_optim_target
        model_final_output = x_t - t * pipe(x_t, t)
        loss = F.mse_loss(model_final_output * (1 - mask), image * (1 - mask))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
    return epsilon_optim_target.detach()


torch.manual_seed(0)
pipe = Denoiser()
for p in pipe.parameters():
    p.requires_grad_(False)
image = nodes.NODE_CLASS_MAPPINGS["LoadImage"]().load()
mask = nodes.NODE_CLASS_MAPPINGS["MaskFromBox"]().make(image)
result = sonic_inpaint(pipe, image, mask)
