import numpy as np
import torch
import torch.nn as nn


class Args:
    nmb_crops = [2]
    crops_for_assign = [0, 1]
    temperature = 0.1
    epsilon = 0.05
    sinkhorn_iterations = 3
    feat_dim = 8
    nmb_prototypes = 6
    queue_length = 32
    epoch_queue_starts = 1
    freeze_prototypes_niters = 5
    base_lr = 0.3
    epochs = 4
    batch_size = 16


args = Args()


class SwAVNet(nn.Module):
    def __init__(self, output_dim, nmb_prototypes):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(12, 32), nn.BatchNorm1d(32), nn.ReLU(inplace=True))
        self.projection_head = nn.Sequential(nn.Linear(32, 32), nn.BatchNorm1d(32), nn.ReLU(inplace=True),
                                             nn.Linear(32, output_dim))
        self.l2norm = True
        self.prototypes = nn.Linear(output_dim, nmb_prototypes, bias=False)

    def forward_head(self, x):
        x = self.projection_head(x)
        if self.l2norm:
            x = nn.functional.normalize(x, dim=1, p=2)
        return x, self.prototypes(x)

    def forward(self, inputs):
        output = self.backbone(torch.cat(inputs))
        return self.forward_head(output)


@torch.no_grad()
def distributed_sinkhorn(out):
    Q = torch.exp(out / args.epsilon).t()
    B = Q.shape[1]
    K = Q.shape[0]

    sum_Q = torch.sum(Q)
    Q /= sum_Q

    for it in range(args.sinkhorn_iterations):
        sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
        Q /= sum_of_rows
        Q /= K

        Q /= torch.sum(Q, dim=0, keepdim=True)
        Q /= B

    Q *= B
    return Q.t()


def augment(x):
    return x + 0.1 * torch.randn_like(x)


def train(train_loader, model, optimizer, epoch, lr_schedule, queue):
    softmax = nn.Softmax(dim=1)
    model.train()
    use_the_queue = False
    for it, batch in enumerate(train_loader):
        inputs = [augment(batch) for _ in range(np.sum(args.nmb_crops))]
        iteration = epoch * len(train_loader) + it
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr_schedule[iteration]

        with torch.no_grad():
            w = model.prototypes.weight.data.clone()
            w = nn.functional.normalize(w, dim=1, p=2)
            model.prototypes.weight.copy_(w)

        embedding, output = model(inputs)
        embedding = embedding.detach()
        bs = inputs[0].size(0)

        loss = 0
        for i, crop_id in enumerate(args.crops_for_assign):
            with torch.no_grad():
                out = output[bs * crop_id: bs * (crop_id + 1)].detach()

                if queue is not None:
                    if use_the_queue or not torch.all(queue[i, -1, :] == 0):
                        use_the_queue = True
                        out = torch.cat((torch.mm(
                            queue[i],
                            model.prototypes.weight.t()
                        ), out))
                    queue[i, bs:] = queue[i, :-bs].clone()
                    queue[i, :bs] = embedding[crop_id * bs: (crop_id + 1) * bs]

                q = distributed_sinkhorn(out)[-bs:]

            subloss = 0
            for v in np.delete(np.arange(np.sum(args.nmb_crops)), crop_id):
                x = output[bs * v: bs * (v + 1)] / args.temperature
                subloss -= torch.mean(torch.sum(q * nn.functional.log_softmax(x, dim=1), dim=1))
            loss += subloss / (np.sum(args.nmb_crops) - 1)
        loss /= len(args.crops_for_assign)

        optimizer.zero_grad()
        loss.backward()
        if iteration < args.freeze_prototypes_niters:
            for name, p in model.named_parameters():
                if "prototypes" in name:
                    p.grad = None
        optimizer.step()
    return loss.item(), queue


torch.manual_seed(31)
centers = torch.randn(6, 12) * 2
data = centers[torch.randint(0, 6, (96,))] + 0.3 * torch.randn(96, 12)
train_loader = [data[k:k + args.batch_size] for k in range(0, 96, args.batch_size)]

model = SwAVNet(args.feat_dim, args.nmb_prototypes)
optimizer = torch.optim.SGD(model.parameters(), lr=args.base_lr, momentum=0.9, weight_decay=1e-6)
total = args.epochs * len(train_loader)
lr_schedule = np.array([args.base_lr * 0.5 * (1 + np.cos(np.pi * t / total)) for t in range(total)])
proto_before = model.prototypes.weight.detach().clone()

queue = None
for epoch in range(args.epochs):
    if args.queue_length > 0 and epoch >= args.epoch_queue_starts and queue is None:
        queue = torch.zeros(len(args.crops_for_assign), args.queue_length, args.feat_dim)
    loss, queue = train(train_loader, model, optimizer, epoch, lr_schedule, queue)
    print(epoch, loss)
print('prototype change', (model.prototypes.weight - proto_before).abs().max().item())
