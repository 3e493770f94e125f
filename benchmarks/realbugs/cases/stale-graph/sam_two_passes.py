import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, **kwargs):
        defaults = dict(rho=rho, **kwargs)
        super(SAM, self).__init__(params, defaults)
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        grad_norm = self._grad_norm()
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)
            for p in group["params"]:
                if p.grad is None:
                    continue
                e_w = p.grad * scale
                p.add_(e_w)
                self.state[p]["e_w"] = e_w
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.sub_(self.state[p]["e_w"])
        self.base_optimizer.step()
        if zero_grad:
            self.zero_grad()

    def _grad_norm(self):
        norms = [p.grad.norm(p=2) for group in self.param_groups for p in group["params"] if p.grad is not None]
        return torch.norm(torch.stack(norms), p=2)


class Classifier(nn.Module):
    def __init__(self, num_tasks):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
        self.heads = nn.Linear(16, num_tasks)

    def forward(self, image):
        logit_map = self.backbone(image)
        return self.heads(logit_map), logit_map


def get_loss(output, target, index, device, cfg):
    loss = F.binary_cross_entropy_with_logits(output[:, index], target[:, index])
    acc = ((output[:, index] > 0).float() == target[:, index]).float().mean()
    return loss, acc


num_tasks = 3
device = "cpu"
cfg = None
model = Classifier(num_tasks)
optimizer = SAM(model.parameters(), torch.optim.SGD, lr=0.1, momentum=0.9)
loss_sum = torch.zeros(num_tasks)
acc_sum = torch.zeros(num_tasks)

for step in range(3):
    image = torch.randn(8, 10)
    target = torch.randint(0, 2, (8, num_tasks)).float()

    output, logit_map = model(image)
    loss = 0
    for t in range(num_tasks):
        loss_t, acc_t = get_loss(output, target, t, device, cfg)
        loss += loss_t
        loss_sum[t] += loss_t.item()
        acc_sum[t] += acc_t.item()

    optimizer.zero_grad()
    loss.backward()
    optimizer.first_step(zero_grad=True)

    output, logit_map = model(image)
    for t in range(num_tasks):
        loss_t, acc_t = get_loss(output, target, t, device, cfg)
        loss += loss_t
        loss_sum[t] += loss_t.item()
        acc_sum[t] += acc_t.item()
    loss.backward()
    optimizer.second_step(zero_grad=True)
