# plain-torch: runs
"""GG002: a cross-entropy or KL written out by hand as a contraction (`torch.einsum("bc,bc->b",
p, log_q)`, a batched dot product with bmm, `p @ log_q.T`) or through `torch.xlogy` (p * log q;
`xlogy(p, p / q)` a KL) whose soft target, a teacher's distribution, is not detached: the
gradient of the distillation term also trains the teacher.
Don't trigger: the target detached or built under no_grad, entropies of one distribution
(`xlogy(p, p)`, an einsum of p and its own log_softmax), R-Drop's terms over one network's two
passes, contractions that are no loss (attention, a probability times a log-probability over the
batch rather than the classes) and log-probabilities weighted by a constant distribution."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

T = 4.0


def nets():
    torch.manual_seed(2)
    teacher = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 5))
    student = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.2), nn.Linear(8, 5))
    opt = torch.optim.SGD(list(student.parameters()) + list(teacher.parameters()), lr=0.05)
    return teacher, student, opt


def batch():
    g = torch.Generator().manual_seed(5)
    return torch.randn(8, 6, generator=g), torch.randint(0, 5, (8,), generator=g)


def buggy():
    teacher, student, opt = nets()
    for _ in range(2):
        x, y = batch()
        t_logits = teacher(x)
        s_logits = student(x)
        p_t = F.softmax(t_logits / T, dim=1)
        log_q = F.log_softmax(s_logits / T, dim=1)
        kd = -torch.einsum("bc,bc->b", p_t, log_q).mean() * T * T  # expect: GG002 t_logits
        soft_teacher = F.softmax(teacher(x), dim=-1)
        ce_bmm = -torch.bmm(soft_teacher.unsqueeze(1), log_q.unsqueeze(2)).mean()  # expect: GG002 soft_teacher
        ce_mm = -(p_t @ torch.log(F.softmax(s_logits, 1) + 1e-8).t()).diagonal().mean()  # expect: GG002 t_logits
        q_s = F.softmax(student(x), dim=1)
        xent = -torch.xlogy(soft_teacher, q_s).sum(1).mean()  # expect: GG002 soft_teacher
        kl = torch.special.xlogy(p_t, p_t / q_s).sum(1).mean()  # expect: GG002 t_logits
        terms = [kd, ce_bmm, ce_mm, xent, kl]
        for term in terms:
            # each term alone sends gradient into the teacher
            g, = torch.autograd.grad(term, teacher[2].weight, retain_graph=True)
            assert g.abs().sum() > 0
        loss = F.cross_entropy(t_logits, y) + F.cross_entropy(s_logits, y) + sum(terms)
        opt.zero_grad()
        loss.backward()
        opt.step()


def clean():
    # every twin in the first iterations, which the guard records in full
    teacher, student, _ = nets()
    query, key = nn.Linear(6, 4), nn.Linear(6, 4)
    params = [*student.parameters(), *teacher.parameters(), *query.parameters(), *key.parameters()]
    opt = torch.optim.SGD(params, lr=0.05)
    student.train()
    for _ in range(2):
        x, y = batch()
        t_logits = teacher(x)
        s_logits = student(x)
        # the soft target detached: the teacher trains on its own loss only
        p_t = F.softmax(t_logits.detach() / T, dim=1)
        log_q = F.log_softmax(s_logits / T, dim=1)
        kd = -torch.einsum("bc,bc->b", p_t, log_q).mean() * T * T
        ce_bmm = -torch.bmm(p_t.unsqueeze(1), log_q.unsqueeze(2)).mean()
        # the teacher's distribution built under no_grad
        with torch.no_grad():
            soft_teacher = F.softmax(teacher(x), dim=-1)
        q_s = F.softmax(s_logits, dim=1)
        xent = -torch.xlogy(soft_teacher, q_s).sum(1).mean()
        kl = torch.special.xlogy(soft_teacher, soft_teacher / q_s).sum(1).mean()
        # label smoothing and a class prior: log-probabilities weighted by a constant distribution
        smooth = torch.full_like(log_q, 0.1 / 5).scatter(1, y[:, None], 0.9 + 0.1 / 5)
        smoothed_ce = -torch.einsum("bc,bc->b", smooth, F.log_softmax(s_logits, 1)).mean()
        prior = torch.tensor([0.3, 0.2, 0.2, 0.2, 0.1])
        prior_ce = -(F.log_softmax(s_logits, 1) @ prior).mean()
        distill = kd + ce_bmm + xent + kl + smoothed_ce + prior_ce

        # one network's own distributions: entropies and R-Drop's symmetric terms (two dropout
        # passes), trained through both sides on purpose
        o1, o2 = s_logits, student(x)
        p1, p2 = F.softmax(o1, 1), F.softmax(o2, 1)
        entropy = -torch.xlogy(p1, p1).sum(1).mean()
        entropy_einsum = -torch.einsum("bc,bc->b", p1, F.log_softmax(o1, 1)).mean()
        r_drop = 0.5 * (torch.einsum("bc,bc->b", p1, torch.log(p1) - F.log_softmax(o2, 1))
                        + torch.xlogy(p2, p2 / p1).sum(1)).mean()
        consistency = -torch.bmm(p2.unsqueeze(1), F.log_softmax(o1, 1).unsqueeze(2)).mean()
        own = -0.1 * entropy + 0.1 * entropy_einsum + r_drop + consistency

        # contractions that are no loss: attention, and log-probabilities pooled over the batch
        attn = F.softmax(query(x) @ key(x).T / math.sqrt(4), dim=-1)
        mixed = attn @ s_logits
        pooled = attn @ F.log_softmax(s_logits, dim=1)  # each sample's averaged over its neighbours
        no_loss = F.cross_entropy(mixed, y) + F.nll_loss(pooled, y)

        loss = F.cross_entropy(t_logits, y) + distill + own + no_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
