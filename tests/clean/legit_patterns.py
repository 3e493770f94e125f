"""Correct training code that uses autograd in unusual but legitimate ways: no finding allowed."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def gan_detached_fake():
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    for _ in range(4):
        real = torch.randn(8, 2)
        fake = G(torch.randn(8, 4))
        opt_d.zero_grad()
        d_loss = (F.binary_cross_entropy_with_logits(D(real), torch.ones(8, 1))
                  + F.binary_cross_entropy_with_logits(D(fake.detach()), torch.zeros(8, 1)))
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = F.binary_cross_entropy_with_logits(D(fake), torch.ones(8, 1))  # fake reused
        g_loss.backward()
        opt_g.step()


def wgan_gp():
    torch.manual_seed(0)
    D = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    G = nn.Linear(3, 2)
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-4)
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-4)
    for _ in range(3):
        real = torch.randn(8, 2)
        fake = G(torch.randn(8, 3)).detach()
        alpha = torch.rand(8, 1)
        interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        grads = torch.autograd.grad(D(interp).sum(), interp, create_graph=True)[0]
        gp = ((grads.norm(2, dim=1) - 1) ** 2).mean()
        d_loss = D(fake).mean() - D(real).mean() + 10 * gp
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        g_loss = -D(G(torch.randn(8, 3))).mean()
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()


def maml_second_order():
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(3, 1) * 0.1)
    meta_opt = torch.optim.SGD([w], lr=0.01)
    for _ in range(3):
        meta_opt.zero_grad()
        meta_loss = 0.0
        for _task in range(2):
            xs, ys = torch.randn(5, 3), torch.randn(5, 1)
            inner = F.mse_loss(xs @ w, ys)
            (g,) = torch.autograd.grad(inner, w, create_graph=True)
            fast = w - 0.1 * g
            xq, yq = torch.randn(5, 3), torch.randn(5, 1)
            meta_loss = meta_loss + F.mse_loss(xq @ fast, yq)
        meta_loss.backward()
        meta_opt.step()


def gradient_accumulation():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    accum = 4
    opt.zero_grad()
    for i in range(12):
        x, y = torch.randn(4, 6), torch.randn(4, 1)
        loss = F.mse_loss(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad(set_to_none=False)


def two_losses_retain_graph():
    torch.manual_seed(0)
    enc = nn.Linear(5, 8)
    cls, rec = nn.Linear(8, 3), nn.Linear(8, 5)
    opt = torch.optim.Adam([*enc.parameters(), *cls.parameters(), *rec.parameters()])
    for _ in range(3):
        x, y = torch.randn(6, 5), torch.randint(0, 3, (6,))
        z = torch.relu(enc(x))
        opt.zero_grad()
        F.cross_entropy(cls(z), y).backward(retain_graph=True)
        F.mse_loss(rec(z), x).backward()
        opt.step()


def truncated_bptt_lstm():
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 8)
    head = nn.Linear(8, 1)
    opt = torch.optim.Adam([*lstm.parameters(), *head.parameters()], lr=1e-3)
    h = (torch.zeros(1, 2, 8), torch.zeros(1, 2, 8))
    for _ in range(4):
        h = tuple(s.detach() for s in h)
        x, y = torch.randn(5, 2, 3), torch.randn(5, 2, 1)
        out, h = lstm(x, h)
        loss = F.mse_loss(head(out), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def classifier_with_metrics_and_eval():
    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(10, 32), nn.ReLU(inplace=True), nn.Dropout(0.1))
            self.out = nn.Linear(32, 4)

        def forward(self, x):
            return self.out(self.body(x))

    net = Net()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    history = []
    for epoch in range(2):
        net.train()
        total = 0.0
        for _ in range(3):
            x, y = torch.randn(16, 10), torch.randint(0, 4, (16,))
            logits = net(x)
            loss = F.cross_entropy(logits, y, label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            total += loss.item()
            acc = (logits.argmax(1) == y).float().mean().item()
        sched.step()
        history.append((total, acc))
        net.eval()
        with torch.no_grad():
            val = F.cross_entropy(net(torch.randn(8, 10)), torch.randint(0, 4, (8,)))
        history.append(val.item())


def manual_sgd_no_optimizer():
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    for _ in range(5):
        x, y = torch.randn(10, 3), torch.randn(10)
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
        w.grad = None
        b.grad.zero_()


def ema_teacher_distillation():
    torch.manual_seed(0)
    student = nn.Linear(4, 3)
    teacher = nn.Linear(4, 3)
    teacher.load_state_dict(student.state_dict())
    for p in teacher.parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(8, 4)
        with torch.no_grad():
            target = F.softmax(teacher(x), dim=1)
        loss = F.kl_div(F.log_softmax(student(x), dim=1), target, reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pt, ps in zip(teacher.parameters(), student.parameters()):
                pt.mul_(0.9).add_(ps, alpha=0.1)


def vqvae_commitment_swapped_roles():
    torch.manual_seed(0)
    enc = nn.Linear(6, 4)
    codebook = nn.Parameter(torch.randn(8, 4))
    opt = torch.optim.Adam([*enc.parameters(), codebook])
    for _ in range(3):
        z = enc(torch.randn(5, 6))
        idx = torch.cdist(z, codebook).argmin(1)
        q = codebook[idx]
        loss = F.mse_loss(q, z.detach()) + 0.25 * F.mse_loss(q.detach(), z)
        q_st = z + (q - z).detach()
        loss = loss + q_st.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def reference_built_once_with_no_grad():
    torch.manual_seed(0)
    src = torch.randn(16, requires_grad=True)
    opt = torch.optim.SGD([src], lr=0.1)
    with torch.no_grad():
        ref = torch.sin(torch.linspace(0, 3, 16)) * 2
    for _ in range(4):
        opt.zero_grad()
        F.mse_loss(src, ref).backward()
        opt.step()


ALL = [gan_detached_fake, wgan_gp, maml_second_order, gradient_accumulation,
       two_losses_retain_graph, truncated_bptt_lstm, classifier_with_metrics_and_eval,
       manual_sgd_no_optimizer, ema_teacher_distillation, vqvae_commitment_swapped_roles,
       reference_built_once_with_no_grad]


def cnn_dataloader_autocast_ema():
    torch.manual_seed(0)
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.randn(64, 1, 12, 12), torch.randint(0, 3, (64,)))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    ema = torch.optim.swa_utils.AveragedModel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=8)
    for x, y in loader:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        ema.update_parameters(model)


def transformer_encoder_masked_lm():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
    enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    emb, head = nn.Embedding(20, 16), nn.Linear(16, 20)
    params = [*enc.parameters(), *emb.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=1e-3)
    for _ in range(3):
        tokens = torch.randint(0, 20, (4, 7))
        mask = torch.rand(4, 7) < 0.3
        inp = tokens.masked_fill(mask, 0)
        pad = tokens == 19
        logits = head(enc(emb(inp), src_key_padding_mask=pad))
        loss = F.cross_entropy(logits[mask], tokens[mask]) if mask.any() else logits.sum() * 0
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_value_(params, 1.0)
        opt.step()


def frozen_backbone_finetune():
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16))
    for p in backbone.parameters():
        p.requires_grad = False
    head = nn.Linear(16, 2)
    opt = torch.optim.Adam(filter(lambda p: p.requires_grad, [*backbone.parameters(), *head.parameters()]))
    running = []
    for _ in range(3):
        x, y = torch.randn(5, 8), torch.randint(0, 2, (5,))
        loss = F.cross_entropy(head(backbone(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running.append(loss.detach())
        if len(running) > 2:
            running.pop(0)


def vae_reparameterization():
    torch.manual_seed(0)
    enc, dec = nn.Linear(10, 8), nn.Linear(4, 10)
    opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-3)
    total = 0.0
    for _ in range(3):
        x = torch.rand(6, 10)
        mu, logvar = enc(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        recon = torch.sigmoid(dec(z))
        kl = -0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
        loss = F.binary_cross_entropy(recon, x) + kl
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()


def physics_fit_with_closure_lbfgs():
    torch.manual_seed(0)
    t = torch.linspace(0, 1, 20)
    obs = 2.0 * torch.exp(-1.5 * t)
    a = torch.tensor(1.0, requires_grad=True)
    k = torch.tensor(1.0, requires_grad=True)
    opt = torch.optim.LBFGS([a, k], lr=0.5, max_iter=5)

    def closure():
        opt.zero_grad()
        loss = F.mse_loss(a * torch.exp(-k * t), obs)
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)


def actor_critic_shared_trunk():
    torch.manual_seed(0)
    trunk = nn.Linear(4, 16)
    actor, critic = nn.Linear(16, 2), nn.Linear(16, 1)
    opt = torch.optim.Adam([*trunk.parameters(), *actor.parameters(), *critic.parameters()], lr=1e-3)
    for _ in range(3):
        obs = torch.randn(6, 4)
        h = torch.tanh(trunk(obs))
        dist = torch.distributions.Categorical(logits=actor(h))
        act = dist.sample()
        value = critic(h).squeeze(1)
        returns = torch.randn(6)
        advantage = returns - value.detach()
        loss = -(dist.log_prob(act) * advantage).mean() + 0.5 * F.mse_loss(value, returns) \
            - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


ALL += [cnn_dataloader_autocast_ema, transformer_encoder_masked_lm, frozen_backbone_finetune,
        vae_reparameterization, physics_fit_with_closure_lbfgs, actor_critic_shared_trunk]


def sam_perturb_and_restore():
    """Sharpness-aware minimization: climb to w + e(w) in place, take the gradient there, put the
    weights back through .data and let the base optimizer step (davda54/sam's second_step)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    base = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    old = {}
    for _ in range(4):
        x, y = torch.randn(6, 4), torch.randn(6, 1)
        F.mse_loss(model(x), y).backward()
        with torch.no_grad():
            norm = torch.stack([p.grad.norm() for p in model.parameters()]).norm()
            for p in model.parameters():
                old[p] = p.data.clone()
                p.add_(p.grad * (0.05 / (norm + 1e-12)))
        base.zero_grad()
        F.mse_loss(model(x), y).backward()
        with torch.no_grad():
            for p in model.parameters():
                p.data = old[p]
        base.step()
        base.zero_grad()


def momentum_encoder_in_optimizer():
    """MoCo: the key encoder is frozen but handed to the optimizer with model.parameters(); its
    momentum update assigns .data (the optimizer never updates it: no gradient, no state)."""
    torch.manual_seed(0)
    model = nn.ModuleDict({"q": nn.Linear(4, 3), "k": nn.Linear(4, 3)})
    for p_q, p_k in zip(model["q"].parameters(), model["k"].parameters()):
        p_k.data.copy_(p_q.data)
        p_k.requires_grad = False
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(4):
        x = torch.randn(6, 4)
        q = F.normalize(model["q"](x), dim=1)
        with torch.no_grad():
            for p_q, p_k in zip(model["q"].parameters(), model["k"].parameters()):
                p_k.data = p_k.data * 0.99 + p_q.data * 0.01
            k = F.normalize(model["k"](x + 0.1 * torch.randn(6, 4)), dim=1)
        loss = -(q * k).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def model_moved_after_training():
    """`model.cpu()` / `.to("cpu")` / `.float()` once training is done (Lightning's teardown):
    nn.Module._apply assigns each parameter its own unchanged data through .data."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(3):
        loss = F.mse_loss(model(torch.randn(6, 4)), torch.randn(6, 1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.cpu()
    model.to("cpu")
    model.float()


def inference_mode_eval_inplace():
    """Validation under torch.inference_mode() between training steps, through in-place layers
    (ReLU(inplace=True)) and an in-place op on the result: inference tensors have no version
    counter."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        loss = F.cross_entropy(model(torch.randn(6, 4)), torch.randint(0, 2, (6,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.eval()
        with torch.inference_mode():
            probs = model(torch.randn(6, 4)).softmax(1)
            probs.mul_(100.0)
        model.train()


ALL += [sam_perturb_and_restore, momentum_encoder_in_optimizer, model_moved_after_training,
        inference_mode_eval_inplace]


def spectral_norm_gan():
    """A hinge-loss GAN whose discriminator uses spectral_norm parametrizations (power iteration
    updates their u/v buffers in place at every forward)."""
    from torch.nn.utils.parametrizations import spectral_norm

    torch.manual_seed(0)
    D = nn.Sequential(spectral_norm(nn.Linear(2, 16)), nn.LeakyReLU(0.2), spectral_norm(nn.Linear(16, 1)))
    G = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 2))
    opt_d = torch.optim.Adam(D.parameters(), 1e-3, betas=(0.0, 0.9))
    opt_g = torch.optim.Adam(G.parameters(), 1e-3, betas=(0.0, 0.9))
    for _ in range(4):
        real, z = torch.randn(8, 2), torch.randn(8, 3)
        fake = G(z)
        d_loss = F.relu(1 - D(real)).mean() + F.relu(1 + D(fake.detach())).mean()
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        g_loss = -D(fake).mean()
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()


class GradReverse(torch.autograd.Function):
    """Identity forward, negated (scaled) gradient backward."""

    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g.neg() * ctx.lambd, None


def dann_gradient_reversal():
    """Domain-adversarial training: a custom autograd.Function reverses the gradient into the
    shared features."""
    torch.manual_seed(0)
    feat, cls, dom = nn.Linear(4, 8), nn.Linear(8, 2), nn.Linear(8, 2)
    opt = torch.optim.SGD([*feat.parameters(), *cls.parameters(), *dom.parameters()], lr=0.1, momentum=0.9)
    for _ in range(4):
        xs, ys, xt = torch.randn(6, 4), torch.randint(0, 2, (6,)), torch.randn(6, 4)
        hs, ht = F.relu(feat(xs)), F.relu(feat(xt))
        loss = F.cross_entropy(cls(hs), ys)
        h = GradReverse.apply(torch.cat([hs, ht]), 0.5)
        loss = loss + F.cross_entropy(dom(h), torch.cat([torch.zeros(6), torch.ones(6)]).long())
        opt.zero_grad()
        loss.backward()
        opt.step()


def ensemble_vmap_stack_module_state():
    """An ensemble trained through torch.func.stack_module_state + vmap over functional_call on a
    meta-device copy: the stacked tensors are the optimized leaves."""
    import copy

    from torch.func import functional_call, stack_module_state, vmap

    torch.manual_seed(0)
    models = [nn.Linear(4, 1) for _ in range(3)]
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def f(p, b, x):
        return functional_call(base, (p, b), (x,))

    opt = torch.optim.Adam(list(params.values()), 1e-2)
    for _ in range(3):
        preds = vmap(f, in_dims=(0, 0, None))(params, buffers, torch.randn(5, 4))
        loss = preds.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def lookahead_optimizer():
    """Lookahead: every k steps the slow weights move toward the fast ones and the fast weights
    are reset to them in place under no_grad."""
    torch.manual_seed(0)
    m = nn.Linear(4, 1)
    inner = torch.optim.Adam(m.parameters(), 1e-2)
    slow = [p.detach().clone() for p in m.parameters()]
    for k in range(6):
        loss = F.mse_loss(m(torch.randn(5, 4)), torch.randn(5, 1))
        inner.zero_grad()
        loss.backward()
        inner.step()
        if (k + 1) % 3 == 0:
            with torch.no_grad():
                for p, s in zip(m.parameters(), slow):
                    s.add_(p - s, alpha=0.5)
                    p.copy_(s)


ALL += [spectral_norm_gan, dann_gradient_reversal, ensemble_vmap_stack_module_state, lookahead_optimizer]


def task_sampled_heads_and_layerdrop():
    """A head per task in a ModuleDict, the task picked per batch (head 'c' first used at the
    fifth step), then LayerDrop over a ModuleList; `loss.item()` logged after every step."""
    torch.manual_seed(0)
    body = nn.Linear(4, 8)
    heads = nn.ModuleDict({k: nn.Linear(8, 1) for k in "abc"})
    opt = torch.optim.SGD([*body.parameters(), *heads.parameters()], lr=0.05)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    for task in "aabac":
        opt.zero_grad()
        loss = F.mse_loss(heads[task](torch.relu(body(x))), y)
        loss.backward()
        opt.step()
        print(loss.item())
    layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
    out = nn.Linear(8, 1)
    opt = torch.optim.Adam([*layers.parameters(), *out.parameters()], lr=1e-3)
    for skip in [{0}, {0, 2}, {0}, {1}, set()]:
        h = torch.randn(8, 8)
        for i, layer in enumerate(layers):
            if i not in skip:
                h = torch.tanh(layer(h))
        opt.zero_grad()
        loss = F.mse_loss(out(h), y)
        loss.backward()
        opt.step()
        print(loss.item())


def frozen_base_adapters_reentrant_checkpoint():
    """A frozen base whose only trainable parameters (LoRA-style adapters) sit inside reentrant
    checkpoints; the embedding output is made to require grad by a forward hook."""
    from torch.utils.checkpoint import checkpoint
    torch.manual_seed(0)
    embed = nn.Embedding(20, 8)
    base = nn.Linear(8, 8)
    for p in [*embed.parameters(), *base.parameters()]:
        p.requires_grad_(False)
    embed.register_forward_hook(lambda module, inputs, output: output.requires_grad_(True))
    lora_a, lora_b = nn.Linear(8, 2, bias=False), nn.Linear(2, 8, bias=False)
    nn.init.zeros_(lora_b.weight)
    opt = torch.optim.AdamW([*lora_a.parameters(), *lora_b.parameters()], lr=1e-2)
    ids, y = torch.randint(0, 20, (4, 5)), torch.randn(4, 5, 8)
    for _ in range(3):
        h = checkpoint(lambda t: torch.tanh(base(t) + lora_b(lora_a(t))), embed(ids), use_reentrant=True)
        loss = F.mse_loss(h, y)
        opt.zero_grad()
        loss.backward()
        opt.step()


ALL += [task_sampled_heads_and_layerdrop, frozen_base_adapters_reentrant_checkpoint]
