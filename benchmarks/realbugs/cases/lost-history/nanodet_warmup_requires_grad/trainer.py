import torch


class Trainer:
    def __init__(self, cfg, model):
        self.cfg = cfg
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=cfg['lr'], momentum=0.9)

    def run_step(self, model, batch):
        feats = [batch['img'][:, :8], batch['img'][:, 8:]]
        output = model(feats)
        loss, loss_stats = model.loss(output, batch['gt_meta'])
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return output, loss, loss_stats

    def warm_up(self, data_loader):
        warmup_steps = self.cfg['warmup_steps']
        step = 0
        while step < warmup_steps:
            for batch in data_loader:
                warmup_lr = self.cfg['lr'] * (step + 1) / warmup_steps
                for param_group in self.optimizer.param_groups:
                    param_group['lr'] = warmup_lr
                output, loss, loss_stats = self.run_step(self.model, batch)
                step += 1
                if step >= warmup_steps:
                    break

    def run(self, train_loader):
        self.warm_up(train_loader)
