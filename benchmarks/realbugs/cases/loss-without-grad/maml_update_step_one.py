import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Learner(nn.Module):
    def __init__(self, n_in, n_way):
        super().__init__()
        self.vars = nn.ParameterList([
            nn.Parameter(torch.randn(32, n_in) * 0.1), nn.Parameter(torch.zeros(32)),
            nn.Parameter(torch.randn(n_way, 32) * 0.1), nn.Parameter(torch.zeros(n_way)),
        ])

    def forward(self, x, vars=None):
        if vars is None:
            vars = self.vars
        x = F.relu(F.linear(x, vars[0], vars[1]))
        return F.linear(x, vars[2], vars[3])

    def parameters(self, recurse=True):
        return self.vars


class Meta(nn.Module):
    def __init__(self, n_in=16, n_way=5, update_lr=0.4, meta_lr=1e-3, update_step=1):
        super().__init__()
        self.update_lr = update_lr
        self.update_step = update_step
        self.net = Learner(n_in, n_way)
        self.meta_optim = torch.optim.Adam(self.net.parameters(), lr=meta_lr)

    def forward(self, x_spt, y_spt, x_qry, y_qry):
        task_num = x_spt.size(0)
        losses_q = [0 for _ in range(self.update_step + 1)]

        for i in range(task_num):
            logits = self.net(x_spt[i], vars=None)
            loss = F.cross_entropy(logits, y_spt[i])
            grad = torch.autograd.grad(loss, self.net.parameters())
            fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, self.net.parameters())))

            with torch.no_grad():
                logits_q = self.net(x_qry[i], self.net.parameters())
                loss_q = F.cross_entropy(logits_q, y_qry[i])
                losses_q[0] += loss_q

            with torch.no_grad():
                logits_q = self.net(x_qry[i], fast_weights)
                loss_q = F.cross_entropy(logits_q, y_qry[i])
                losses_q[1] += loss_q

            for k in range(1, self.update_step):
                logits = self.net(x_spt[i], fast_weights)
                loss = F.cross_entropy(logits, y_spt[i])
                grad = torch.autograd.grad(loss, fast_weights)
                fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, fast_weights)))
                logits_q = self.net(x_qry[i], fast_weights)
                loss_q = F.cross_entropy(logits_q, y_qry[i])
                losses_q[k + 1] += loss_q

        loss_q = losses_q[-1] / task_num
        self.meta_optim.zero_grad()
        loss_q.backward()
        self.meta_optim.step()
        return loss_q.item()


maml = Meta(update_step=1)
x_spt, y_spt = torch.randn(4, 5, 16), torch.randint(0, 5, (4, 5))
x_qry, y_qry = torch.randn(4, 15, 16), torch.randint(0, 5, (4, 15))
for step in range(3):
    print(step, maml(x_spt, y_spt, x_qry, y_qry))
