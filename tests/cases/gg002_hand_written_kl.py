# plain-torch: runs
"""GG002: a KL divergence written out by hand with the log of the target's own distribution
folded in (`p * (log p - log q)`, `p * log(p / q)`, or the reverse sign) whose soft target, a
teacher's distribution, is not detached: the gradient of the KL term also trains the teacher.
Don't trigger: the target detached in both places or built under no_grad, deep mutual learning
with detached peers, and KL / entropy terms over one network's own distributions (R-Drop)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

T = 2.0


def nets():
    torch.manual_seed(1)
    teacher = nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 3))
    student = nn.Sequential(nn.Linear(5, 6), nn.Dropout(0.1), nn.Linear(6, 3))
    opt = torch.optim.Adam(list(student.parameters()) + list(teacher.parameters()), lr=1e-2)
    return teacher, student, opt


def batch():
    g = torch.Generator().manual_seed(7)
    return torch.randn(10, 5, generator=g), torch.randint(0, 3, (10,), generator=g)


def buggy():
    teacher, student, opt = nets()
    for _ in range(2):
        x, y = batch()
        t_out = teacher(x)
        s_out = student(x)
        p_t = F.softmax(t_out / T, dim=-1)
        log_q = F.log_softmax(s_out / T, dim=-1)
        kl_diff = (p_t * (torch.log(p_t + 1e-8) - log_q)).sum(-1).mean() * T * T  # expect: GG002 t_out
        q_s = torch.softmax(student(x), -1)
        p_teacher = torch.softmax(teacher(x), -1)
        kl_ratio = torch.mean(torch.sum(p_teacher * torch.log(p_teacher / q_s), 1))  # expect: GG002 p_teacher
        neg_kl = (F.softmax(t_out, 1) * (F.log_softmax(s_out, 1) - F.log_softmax(t_out, 1))).sum(1)  # expect: GG002 t_out
        loss = F.cross_entropy(t_out, y) + F.cross_entropy(s_out, y) + kl_diff + kl_ratio - neg_kl.mean()
        teacher.zero_grad()
        (kl_diff + kl_ratio).backward(retain_graph=True)
        # the teacher got gradient from the student's KL terms alone
        assert teacher[2].weight.grad is not None and teacher[2].weight.grad.abs().sum() > 0
        opt.zero_grad()
        loss.backward()
        opt.step()


def clean():
    teacher, student, opt = nets()
    for _ in range(2):
        x, y = batch()
        t_out = teacher(x)
        s_out = student(x)
        # the soft target detached in both places
        p_t = F.softmax(t_out / T, dim=-1).detach()
        log_q = F.log_softmax(s_out / T, dim=-1)
        kl_diff = (p_t * (torch.log(p_t + 1e-8) - log_q)).sum(-1).mean() * T * T
        # the teacher's distribution built under no_grad
        with torch.no_grad():
            p_teacher = torch.softmax(teacher(x), -1)
        q_s = torch.softmax(student(x), -1)
        kl_ratio = torch.mean(torch.sum(p_teacher * torch.log(p_teacher / q_s), 1))
        loss = F.cross_entropy(t_out, y) + F.cross_entropy(s_out, y) + kl_diff + kl_ratio
        opt.zero_grad()
        loss.backward()
        opt.step()

    # deep mutual learning: each network toward the other's detached distribution
    net_a, net_b, _ = nets()
    opt_a = torch.optim.SGD(net_a.parameters(), lr=0.1)
    opt_b = torch.optim.SGD(net_b.parameters(), lr=0.1)
    for _ in range(2):
        x, y = batch()
        out_a, out_b = net_a(x), net_b(x)
        pa, pb = F.softmax(out_a, 1).detach(), F.softmax(out_b, 1).detach()
        kl_a = (pb * (pb.log() - F.log_softmax(out_a, 1))).sum(1).mean()
        kl_b = (pa * torch.log(pa / F.softmax(out_b, 1))).sum(1).mean()
        opt_a.zero_grad()
        opt_b.zero_grad()
        (F.cross_entropy(out_a, y) + kl_a + F.cross_entropy(out_b, y) + kl_b).backward()
        opt_a.step()
        opt_b.step()

    # one network's own distributions, trained through both sides on purpose
    _, student, _ = nets()
    opt = torch.optim.Adam(student.parameters(), lr=1e-2)
    student.train()
    for _ in range(2):
        x, y = batch()
        o1, o2 = student(x), student(x)  # two dropout passes (R-Drop's symmetric KL)
        p1, p2 = F.softmax(o1, -1), F.softmax(o2, -1)
        r_drop = 0.5 * ((p1 * (p1.log() - p2.log())).sum(-1) + (p2 * torch.log(p2 / p1)).sum(-1)).mean()
        uniform = torch.full_like(p1, 1.0 / 3)
        to_uniform = (p1 * (torch.log(p1) - torch.log(uniform))).sum(-1).mean()  # an entropy
        loss = F.cross_entropy(o1, y) + r_drop + 0.1 * to_uniform
        opt.zero_grad()
        loss.backward()
        opt.step()
