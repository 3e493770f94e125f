# plain-torch: runs
"""GG002: a cross-entropy written out by hand (a probability times another network's
log-probability) whose soft target is not detached, so the gradient also trains the network that
made the target. Don't trigger: the target detached, deep mutual learning with detached peers,
and terms over one network's own distributions (entropy, two dropout passes, a mixture's entropy)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def nets():
    torch.manual_seed(0)
    teacher = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    student = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.2), nn.Linear(8, 4))
    opt = torch.optim.SGD(list(student.parameters()) + list(teacher.parameters()), lr=0.1)
    return teacher, student, opt


def batch():
    g = torch.Generator().manual_seed(3)
    return torch.randn(8, 6, generator=g), torch.randint(0, 4, (8,), generator=g)


def buggy():
    teacher, student, opt = nets()
    for _ in range(2):
        x, y = batch()
        t_logits = teacher(x)
        s_logits = student(x)
        kd = -(F.softmax(t_logits, 1) * F.log_softmax(s_logits, 1)).sum(1).mean()  # expect: GG002 t_logits
        t_prob = torch.sigmoid(teacher(x)[:, 0])
        s_out = student(x)[:, 0]
        bce = -(t_prob * F.logsigmoid(s_out) + (1 - t_prob) * F.logsigmoid(-s_out)).mean()  # expect: GG002 t_prob
        loss = F.cross_entropy(t_logits, y) + kd + bce
        opt.zero_grad()
        teacher.zero_grad()
        kd.backward(retain_graph=True)
        # the teacher got gradient from the student's distillation term alone
        assert teacher[2].weight.grad is not None and teacher[2].weight.grad.abs().sum() > 0
        opt.zero_grad()
        loss.backward()
        opt.step()


def clean():
    teacher, student, opt = nets()
    for _ in range(2):
        x, y = batch()
        t_logits = teacher(x)
        s_logits = student(x)
        # the soft target detached: the teacher trains on its own loss only
        kd = -(F.softmax(t_logits.detach(), 1) * F.log_softmax(s_logits, 1)).sum(1).mean()
        loss = F.cross_entropy(t_logits, y) + kd
        opt.zero_grad()
        loss.backward()
        opt.step()

    # deep mutual learning: both networks trained, each toward the other's detached prediction
    net_a, net_b, _ = nets()
    opt_a = torch.optim.SGD(net_a.parameters(), lr=0.1)
    opt_b = torch.optim.SGD(net_b.parameters(), lr=0.1)
    for _ in range(2):
        x, y = batch()
        out_a, out_b = net_a(x), net_b(x)
        kl_a = (F.softmax(out_b.detach(), 1) * (F.log_softmax(out_b.detach(), 1) - F.log_softmax(out_a, 1))).sum(1).mean()
        kl_b = torch.sum(F.softmax(out_a, 1).detach() * -F.log_softmax(out_b, 1), dim=1).mean()
        opt_a.zero_grad()
        opt_b.zero_grad()
        (F.cross_entropy(out_a, y) + kl_a + F.cross_entropy(out_b, y) + kl_b).backward()
        opt_a.step()
        opt_b.step()

    # one network's own distributions, trained through both sides on purpose
    teacher, student, opt = nets()
    student.train()
    for _ in range(2):
        x, y = batch()
        p1, p2 = student(x), student(x)  # two dropout passes (R-Drop)
        consistency = -(F.softmax(p1, 1) * F.log_softmax(p2, 1)).sum(1).mean()
        probs = F.softmax(p1, dim=1)
        entropy = -(probs * torch.log(probs + 1e-8)).sum(1).mean()
        mix = 0.5 * (F.softmax(p1, 1) + F.softmax(teacher(x), 1))  # co-training's Jensen-Shannon
        js = -(mix * torch.log(mix)).sum() + (probs * F.log_softmax(p1, 1)).sum()
        loss = F.cross_entropy(p1, y) + consistency - 0.1 * entropy + 0.1 * js
        opt.zero_grad()
        loss.backward()
        opt.step()
