import torch

from gfl_head import GFLHead
from trainer import Trainer

torch.manual_seed(0)


def make_batch(with_objects):
    labels = torch.full((2, 8, 8), -1, dtype=torch.long)
    if with_objects:
        labels[:, 3, 4] = 1
    return {'img': torch.randn(2, 16, 8, 8),
            'gt_meta': {'labels': [labels, labels.clone()],
                        'bbox_targets': [torch.rand(2, 8, 8, 4) * 6, torch.rand(2, 8, 8, 4) * 6]}}


def main():
    cfg = {'lr': 0.01, 'warmup_steps': 3}
    model = GFLHead()
    train_dataloader = [make_batch(False), make_batch(False), make_batch(True)]
    trainer = Trainer(cfg, model)
    trainer.run(train_dataloader)


if __name__ == "__main__":
    main()
