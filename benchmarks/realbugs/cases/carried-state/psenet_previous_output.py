import torch
import torch.nn as nn

torch.manual_seed(0)


class UnetTMO(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1))

    def forward(self, im):
        pred_gamma = torch.sigmoid(self.conv(im)) * 2 + 0.1
        pred_im = im.clamp(1e-4, 1) ** pred_gamma
        return pred_im, pred_gamma


class TVLoss(nn.Module):
    def forward(self, x):
        h_tv = (x[:, :, 1:, :] - x[:, :, :-1, :]).pow(2).mean()
        w_tv = (x[:, :, :, 1:] - x[:, :, :, :-1]).pow(2).mean()
        return h_tv + w_tv


class IQA(nn.Module):
    def forward(self, im):
        return -(im.mean(dim=1, keepdim=True) - 0.5).abs()


class PSENet(nn.Module):
    def __init__(self, tv_w=1.0, gamma_lower=-2, gamma_upper=3, number_refs=2, lr=1e-3):
        super().__init__()
        self.tv_w = tv_w
        self.gamma_lower = gamma_lower
        self.gamma_upper = gamma_upper
        self.number_refs = number_refs
        self.lr = lr
        self.model = UnetTMO()
        self.mse = torch.nn.MSELoss()
        self.tv = TVLoss()
        self.iqa = IQA()
        self.saved_input = None
        self.saved_pseudo_gt = None

    def configure_optimizers(self):
        return torch.optim.Adam(self.model.parameters(), lr=self.lr, betas=[0.9, 0.99])

    def generate_pseudo_gt(self, im):
        bs, ch, h, w = im.shape
        underexposed_ranges = torch.linspace(0, self.gamma_upper, steps=self.number_refs)
        underexposed_gamma = torch.exp(torch.rand([bs, self.number_refs]) * underexposed_ranges[None, :])
        overrexposed_ranges = torch.linspace(self.gamma_lower, 0, steps=self.number_refs)
        overrexposed_gamma = torch.exp(torch.rand([bs, self.number_refs]) * overrexposed_ranges[None, :])
        gammas = torch.cat([underexposed_gamma, overrexposed_gamma], dim=1)
        synthetic_references = 1 - (1 - im[:, None]) ** gammas[:, :, None, None, None]
        previous_iter_output = self.model(im)[0].clone()
        references = torch.cat([im[:, None], previous_iter_output[:, None], synthetic_references], dim=1)
        nref = references.shape[1]
        scores = self.iqa(references.view(bs * nref, ch, h, w))
        scores = scores.view(bs, nref, 1, h, w)
        max_idx = torch.argmax(scores, dim=1)
        max_idx = max_idx.repeat(1, ch, 1, 1)[:, None]
        pseudo_gt = torch.gather(references, 1, max_idx)
        return pseudo_gt.squeeze(1)

    def training_step(self, batch, batch_idx):
        nth_input = batch
        nth_pseudo_gt = self.generate_pseudo_gt(batch)
        if self.saved_input is not None:
            im = self.saved_input
            pred_im, pred_gamma = self.model(im)
            pseudo_gt = self.saved_pseudo_gt
            reconstruction_loss = self.mse(pred_im, pseudo_gt)
            tv_loss = self.tv(pred_gamma)
            loss = reconstruction_loss + tv_loss * self.tv_w
        else:
            loss = None
        self.saved_input = nth_input
        self.saved_pseudo_gt = nth_pseudo_gt
        return loss


class Trainer:
    def __init__(self, max_epochs=1):
        self.max_epochs = max_epochs

    def fit(self, module, train_dataloader):
        optimizer = module.configure_optimizers()
        for epoch in range(self.max_epochs):
            for batch_idx, batch in enumerate(train_dataloader):
                loss = module.training_step(batch, batch_idx)
                if loss is None:
                    continue
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()


train_dataloader = [torch.rand(2, 3, 8, 8) for _ in range(4)]
model = PSENet()
trainer = Trainer()
trainer.fit(model, train_dataloader)
