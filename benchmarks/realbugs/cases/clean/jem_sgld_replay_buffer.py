import torch as t, torch.nn as nn

seed = 1
im_sz = 8
n_ch = 3


class Args:
    batch_size = 8
    buffer_size = 40
    reinit_freq = 0.05
    n_steps = 5
    sgld_lr = 1.0
    sgld_std = 1e-2
    n_classes = 10
    lr = 1e-4
    warmup_iters = 4
    n_epochs = 2
    p_x_weight = 1.0
    p_y_given_x_weight = 1.0
    print_every = 2


class F(nn.Module):
    def __init__(self, n_classes=10):
        super(F, self).__init__()
        self.f = nn.Sequential(nn.Conv2d(n_ch, 8, 3, padding=1), nn.LeakyReLU(0.2),
                               nn.Conv2d(8, 8, 3, padding=1, stride=2), nn.LeakyReLU(0.2),
                               nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.energy_output = nn.Linear(8, 1)
        self.class_output = nn.Linear(8, n_classes)

    def forward(self, x, y=None):
        penult_z = self.f(x)
        return self.energy_output(penult_z).squeeze()

    def classify(self, x):
        penult_z = self.f(x)
        return self.class_output(penult_z).squeeze()


class CCF(F):
    def __init__(self, n_classes=10):
        super(CCF, self).__init__(n_classes=n_classes)

    def forward(self, x, y=None):
        logits = self.classify(x)
        if y is None:
            return logits.logsumexp(1)
        else:
            return t.gather(logits, 1, y[:, None])


def init_random(args, bs):
    return t.FloatTensor(bs, n_ch, im_sz, im_sz).uniform_(-1, 1)


def get_sample_q(args, device):
    def sample_p_0(replay_buffer, bs, y=None):
        if len(replay_buffer) == 0:
            return init_random(args, bs), []
        buffer_size = len(replay_buffer) if y is None else len(replay_buffer) // args.n_classes
        inds = t.randint(0, buffer_size, (bs,))
        if y is not None:
            inds = y.cpu() * buffer_size + inds
        buffer_samples = replay_buffer[inds]
        random_samples = init_random(args, bs)
        choose_random = (t.rand(bs) < args.reinit_freq).float()[:, None, None, None]
        samples = choose_random * random_samples + (1 - choose_random) * buffer_samples
        return samples.to(device), inds

    def sample_q(f, replay_buffer, y=None, n_steps=args.n_steps):
        f.eval()
        bs = args.batch_size if y is None else y.size(0)
        init_sample, buffer_inds = sample_p_0(replay_buffer, bs=bs, y=y)
        x_k = t.autograd.Variable(init_sample, requires_grad=True)
        for k in range(n_steps):
            f_prime = t.autograd.grad(f(x_k, y=y).sum(), [x_k], retain_graph=True)[0]
            x_k.data += args.sgld_lr * f_prime + args.sgld_std * t.randn_like(x_k)
        f.train()
        final_samples = x_k.detach()
        if len(replay_buffer) > 0:
            replay_buffer[buffer_inds] = final_samples.cpu()
        return final_samples
    return sample_q


def main(args):
    t.manual_seed(seed)
    device = t.device('cpu')

    x_all = t.randn(32, n_ch, im_sz, im_sz).clamp(-1, 1)
    y_all = t.randint(0, args.n_classes, (32,))
    dload_train = [(x_all[i:i + args.batch_size], y_all[i:i + args.batch_size]) for i in range(0, 32, args.batch_size)]

    sample_q = get_sample_q(args, device)
    f = CCF(n_classes=args.n_classes).to(device)
    replay_buffer = init_random(args, args.buffer_size)

    optim = t.optim.Adam(f.parameters(), lr=args.lr, betas=[.9, .999], weight_decay=0.0)

    cur_iter = 0
    for epoch in range(args.n_epochs):
        for i, (x_p_d, y_lab) in enumerate(dload_train):
            if cur_iter <= args.warmup_iters:
                lr = args.lr * cur_iter / float(args.warmup_iters)
                for param_group in optim.param_groups:
                    param_group['lr'] = lr

            x_p_d = x_p_d.to(device)
            x_lab, y_lab = x_p_d, y_lab.to(device)

            L = 0.
            if args.p_x_weight > 0:
                x_q = sample_q(f, replay_buffer)

                fp_all = f(x_p_d)
                fq_all = f(x_q)
                fp = fp_all.mean()
                fq = fq_all.mean()

                l_p_x = -(fp - fq)
                if cur_iter % args.print_every == 0:
                    print('P(x) | {}:{:>d} f(x_p_d)={:>14.9f} f(x_q)={:>14.9f} d={:>14.9f}'.format(epoch, i, fp, fq, fp - fq))
                L += args.p_x_weight * l_p_x

            if args.p_y_given_x_weight > 0:
                logits = f.classify(x_lab)
                l_p_y_given_x = nn.CrossEntropyLoss()(logits, y_lab)
                if cur_iter % args.print_every == 0:
                    acc = (logits.max(1)[1] == y_lab).float().mean()
                    print('P(y|x) {}:{:>d} loss={:>14.9f}, acc={:>14.9f}'.format(epoch, cur_iter, l_p_y_given_x.item(), acc.item()))
                L += args.p_y_given_x_weight * l_p_y_given_x

            if L.abs().item() > 1e8:
                raise SystemExit("diverged")

            optim.zero_grad()
            L.backward()
            optim.step()
            cur_iter += 1


if __name__ == "__main__":
    main(Args())
