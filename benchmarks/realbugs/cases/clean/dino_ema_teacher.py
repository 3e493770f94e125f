import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


class DINOHead(nn.Module):
    def __init__(self, in_dim, out_dim, hidden_dim=32, bottleneck_dim=8):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden_dim), nn.GELU(), nn.Linear(hidden_dim, bottleneck_dim))
        self.last_layer = nn.utils.parametrizations.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))

    def forward(self, x):
        x = self.mlp(x)
        x = F.normalize(x, dim=-1, p=2)
        return self.last_layer(x)


class MultiCropWrapper(nn.Module):
    def __init__(self, backbone, head):
        super().__init__()
        self.backbone = backbone
        self.head = head

    def forward(self, x):
        if not isinstance(x, list):
            x = [x]
        output = self.backbone(torch.cat(x))
        return self.head(output)


class DINOLoss(nn.Module):
    def __init__(self, out_dim, ncrops, warmup_teacher_temp=0.04, teacher_temp=0.04,
                 student_temp=0.1, center_momentum=0.9):
        super().__init__()
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.ncrops = ncrops
        self.teacher_temp = teacher_temp
        self.register_buffer("center", torch.zeros(1, out_dim))

    def forward(self, student_output, teacher_output):
        student_out = student_output / self.student_temp
        student_out = student_out.chunk(self.ncrops)

        teacher_out = F.softmax((teacher_output - self.center) / self.teacher_temp, dim=-1)
        teacher_out = teacher_out.detach().chunk(2)

        total_loss = 0
        n_loss_terms = 0
        for iq, q in enumerate(teacher_out):
            for v in range(len(student_out)):
                if v == iq:
                    continue
                loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                total_loss += loss.mean()
                n_loss_terms += 1
        total_loss /= n_loss_terms
        self.update_center(teacher_output)
        return total_loss

    @torch.no_grad()
    def update_center(self, teacher_output):
        batch_center = torch.sum(teacher_output, dim=0, keepdim=True)
        batch_center = batch_center / len(teacher_output)
        self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)


torch.manual_seed(0)
out_dim = 16
backbone = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 16))
student = MultiCropWrapper(backbone, DINOHead(16, out_dim))
teacher = MultiCropWrapper(copy.deepcopy(backbone), DINOHead(16, out_dim))
teacher.load_state_dict(student.state_dict())
for p in teacher.parameters():
    p.requires_grad = False

dino_loss = DINOLoss(out_dim, ncrops=4)
params_groups = [p for p in student.parameters() if p.requires_grad]
optimizer = torch.optim.AdamW(params_groups, lr=1e-3)
momentum_schedule = [0.99, 0.992, 0.994, 0.996, 0.998]

data = torch.randn(40, 10)
for it in range(5):
    x = data[it * 8:(it + 1) * 8]
    images = [x + 0.1 * torch.randn_like(x) for _ in range(4)]
    teacher_output = teacher(images[:2])
    student_output = student(images)
    loss = dino_loss(student_output, teacher_output)

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

    with torch.no_grad():
        m = momentum_schedule[it]
        for param_q, param_k in zip(student.parameters(), teacher.parameters()):
            param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)
    print(it, loss.item())
