import functools
import time

import numpy as np
import torch
import torch.nn.functional as F
import torch.optim as optim
from torch import nn
from torch.func import functional_call, grad, vmap


class Args:
    n_way = 3
    k_spt = 2
    k_qry = 3
    device = "cpu"
    task_num = 4
    seed = 1


class OmniglotNShot:
    """Synthetic n-way k-shot tasks with the loader's interface (x_train, x_test, batchsz, next)."""

    def __init__(self, batchsz, n_way, k_shot, k_query, imgsz, device):
        self.batchsz = batchsz
        self.n_way = n_way
        self.k_shot = k_shot
        self.k_query = k_query
        self.imgsz = imgsz
        self.device = device
        self.x_train = torch.randn(2 * batchsz, 1, imgsz, imgsz)
        self.x_test = torch.randn(batchsz, 1, imgsz, imgsz)
        self.prototypes = torch.randn(10, 1, imgsz, imgsz)

    def _task(self, setsz_per_class):
        classes = torch.randperm(10)[:self.n_way]
        xs, ys = [], []
        for label, c in enumerate(classes):
            xs.append(self.prototypes[c] + 0.3 * torch.randn(setsz_per_class, 1, self.imgsz, self.imgsz))
            ys.append(torch.full((setsz_per_class,), label))
        return torch.cat(xs), torch.cat(ys)

    def next(self, mode="train"):
        spt = [self._task(self.k_shot) for _ in range(self.batchsz)]
        qry = [self._task(self.k_query) for _ in range(self.batchsz)]
        x_spt = torch.stack([s[0] for s in spt]).to(self.device)
        y_spt = torch.stack([s[1] for s in spt]).to(self.device)
        x_qry = torch.stack([q[0] for q in qry]).to(self.device)
        y_qry = torch.stack([q[1] for q in qry]).to(self.device)
        return x_spt, y_spt, x_qry, y_qry


def main():
    args = Args()

    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    device = args.device
    db = OmniglotNShot(
        batchsz=args.task_num,
        n_way=args.n_way,
        k_shot=args.k_spt,
        k_query=args.k_qry,
        imgsz=12,
        device=device,
    )

    inplace_relu = True
    net = nn.Sequential(
        nn.Conv2d(1, 8, 3),
        nn.BatchNorm2d(8, affine=True, track_running_stats=False),
        nn.ReLU(inplace=inplace_relu),
        nn.MaxPool2d(2, 2),
        nn.Conv2d(8, 8, 3),
        nn.BatchNorm2d(8, affine=True, track_running_stats=False),
        nn.ReLU(inplace=inplace_relu),
        nn.MaxPool2d(2, 2),
        nn.Flatten(),
        nn.Linear(8, args.n_way),
    ).to(device)

    net.train()

    meta_opt = optim.Adam(net.parameters(), lr=1e-3)

    log = []
    for epoch in range(2):
        train(db, net, device, meta_opt, epoch, log)
        test(db, net, device, epoch, log)


def loss_for_task(net, n_inner_iter, x_spt, y_spt, x_qry, y_qry):
    params = dict(net.named_parameters())
    buffers = dict(net.named_buffers())
    querysz = x_qry.size(0)

    def compute_loss(new_params, buffers, x, y):
        logits = functional_call(net, (new_params, buffers), x)
        loss = F.cross_entropy(logits, y)
        return loss

    new_params = params
    for _ in range(n_inner_iter):
        grads = grad(compute_loss)(new_params, buffers, x_spt, y_spt)
        new_params = {k: new_params[k] - g * 1e-1 for k, g, in grads.items()}

    qry_logits = functional_call(net, (new_params, buffers), x_qry)
    qry_loss = F.cross_entropy(qry_logits, y_qry)
    qry_acc = (qry_logits.argmax(dim=1) == y_qry).sum() / querysz

    return qry_loss, qry_acc


def train(db, net, device, meta_opt, epoch, log):
    n_train_iter = db.x_train.shape[0] // db.batchsz

    for batch_idx in range(n_train_iter):
        start_time = time.time()
        x_spt, y_spt, x_qry, y_qry = db.next()

        task_num, setsz, c_, h, w = x_spt.size()

        n_inner_iter = 2
        meta_opt.zero_grad()

        compute_loss_for_task = functools.partial(loss_for_task, net, n_inner_iter)
        qry_losses, qry_accs = vmap(compute_loss_for_task)(x_spt, y_spt, x_qry, y_qry)

        qry_losses.sum().backward()

        meta_opt.step()
        qry_losses = qry_losses.detach().sum() / task_num
        qry_accs = 100.0 * qry_accs.sum() / task_num
        i = epoch + float(batch_idx) / n_train_iter
        iter_time = time.time() - start_time
        print(f"[Epoch {i:.2f}] Train Loss: {qry_losses:.2f} | Acc: {qry_accs:.2f} | Time: {iter_time:.2f}")

        log.append({"epoch": i, "loss": qry_losses, "acc": qry_accs, "mode": "train", "time": time.time()})


def test(db, net, device, epoch, log):
    params = dict(net.named_parameters())
    buffers = dict(net.named_buffers())
    n_test_iter = db.x_test.shape[0] // db.batchsz

    qry_losses = []
    qry_accs = []

    for batch_idx in range(n_test_iter):
        x_spt, y_spt, x_qry, y_qry = db.next("test")
        task_num, setsz, c_, h, w = x_spt.size()

        n_inner_iter = 2

        for i in range(task_num):
            new_params = params
            for _ in range(n_inner_iter):
                spt_logits = functional_call(net, (new_params, buffers), x_spt[i])
                spt_loss = F.cross_entropy(spt_logits, y_spt[i])
                grads = torch.autograd.grad(spt_loss, new_params.values())
                new_params = {
                    k: new_params[k] - g * 1e-1 for k, g, in zip(new_params, grads)
                }

            qry_logits = functional_call(net, (new_params, buffers), x_qry[i]).detach()
            qry_loss = F.cross_entropy(qry_logits, y_qry[i], reduction="none")
            qry_losses.append(qry_loss.detach())
            qry_accs.append((qry_logits.argmax(dim=1) == y_qry[i]).detach())

    qry_losses = torch.cat(qry_losses).mean().item()
    qry_accs = 100.0 * torch.cat(qry_accs).float().mean().item()
    print(f"[Epoch {epoch+1:.2f}] Test Loss: {qry_losses:.2f} | Acc: {qry_accs:.2f}")
    log.append({"epoch": epoch + 1, "loss": qry_losses, "acc": qry_accs, "mode": "test", "time": time.time()})


if __name__ == "__main__":
    main()
