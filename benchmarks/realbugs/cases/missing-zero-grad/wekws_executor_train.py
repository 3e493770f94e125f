import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import clip_grad_norm_

torch.manual_seed(0)


def criterion(loss_type, logits, target, lengths, min_duration=0):
    max_logits, _ = logits.max(dim=1)
    loss = F.binary_cross_entropy(max_logits.squeeze(-1), target.float())
    acc = ((max_logits.squeeze(-1) > 0.5).long() == target).float().mean().item()
    return loss, acc


class Executor:
    def __init__(self):
        self.step = 0

    def train(self, model, optimizer, data_loader, device, writer, args):
        model.train()
        clip = args.get('grad_clip', 50.0)
        log_interval = args.get('log_interval', 10)
        epoch = args.get('epoch', 0)
        min_duration = args.get('min_duration', 0)
        for batch_idx, batch in enumerate(data_loader):
            key, feats, target, feats_lengths = batch
            feats = feats.to(device)
            target = target.to(device)
            feats_lengths = feats_lengths.to(device)
            num_utts = feats_lengths.size(0)
            if num_utts == 0:
                continue
            logits = model(feats)
            loss_type = args.get('criterion', 'max_pooling')
            loss, acc = criterion(loss_type, logits, target, feats_lengths,
                                  min_duration)
            loss.backward()
            grad_norm = clip_grad_norm_(model.parameters(), clip)
            if torch.isfinite(grad_norm):
                optimizer.step()
            if batch_idx % log_interval == 0:
                print('TRAIN Batch {}/{} loss {:.8f} acc {:.8f}'.format(
                    epoch, batch_idx, loss.item(), acc))


class KWSModel(nn.Module):
    def __init__(self, idim=10, hdim=16):
        super().__init__()
        self.backbone = nn.GRU(idim, hdim, batch_first=True)
        self.classifier = nn.Linear(hdim, 1)

    def forward(self, x):
        x, _ = self.backbone(x)
        return torch.sigmoid(self.classifier(x))


model = KWSModel()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
data_loader = []
for i in range(6):
    feats = torch.randn(4, 12, 10)
    data_loader.append((['utt%d' % i] * 4, feats, torch.randint(0, 2, (4,)), torch.full((4,), 12)))
executor = Executor()
for epoch in range(2):
    executor.train(model, optimizer, data_loader, torch.device('cpu'), None, {'epoch': epoch, 'log_interval': 3})
