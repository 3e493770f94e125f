# plain-torch: runs
"""GG002: knowledge distillation where the teacher runs with autograd on."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def models():
    torch.manual_seed(0)
    teacher = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 5))
    student = nn.Linear(8, 5)
    return teacher, student, torch.optim.Adam(student.parameters(), lr=1e-3)


def buggy():
    teacher, student, opt = models()
    for _ in range(2):
        x = torch.randn(4, 8)
        soft_targets = F.softmax(teacher(x) / 2.0, dim=1)
        log_probs = F.log_softmax(student(x) / 2.0, dim=1)
        loss = F.kl_div(log_probs, soft_targets, reduction="batchmean")  # expect: GG002 soft_targets
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert teacher[0].weight.grad is not None  # the teacher got gradients it never uses


def clean():
    teacher, student, opt = models()
    teacher.eval()
    for _ in range(2):
        x = torch.randn(4, 8)
        with torch.no_grad():
            soft_targets = F.softmax(teacher(x) / 2.0, dim=1)
        loss = F.kl_div(F.log_softmax(student(x) / 2.0, dim=1), soft_targets, reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
