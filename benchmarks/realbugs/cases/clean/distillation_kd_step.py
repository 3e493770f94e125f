import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Optimizer

KD_loss = nn.KLDivLoss(reduction='batchmean')


class Classifier(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, hidden), nn.ReLU(), nn.Linear(hidden, 5))

    def forward(self, inputs):
        return self.net(inputs)


def kd_step(teacher: nn.Module,
            student: nn.Module,
            temperature: float,
            inputs: torch.tensor,
            optimizer: Optimizer):
    teacher.eval()
    student.train()

    with torch.no_grad():
        logits_t = teacher(inputs=inputs)
    logits_s = student(inputs=inputs)

    loss = KD_loss(input=F.log_softmax(logits_s/temperature, dim=-1),
                   target=F.softmax(logits_t/temperature, dim=-1))

    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.item()


torch.manual_seed(0)
teacher = Classifier(64)
student = Classifier(8)
optimizer = torch.optim.Adam(student.parameters(), lr=1e-3)
data = torch.randn(48, 12)
for step in range(6):
    inputs = data[(step % 3) * 16:(step % 3 + 1) * 16]
    print(step, kd_step(teacher, student, 2.0, inputs, optimizer))
