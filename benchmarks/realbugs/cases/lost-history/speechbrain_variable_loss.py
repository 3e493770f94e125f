import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

torch.manual_seed(0)


class Stage:
    TRAIN = "train"
    VALID = "valid"


class SpkIdBrain:
    def __init__(self, modules, opt_class):
        self.modules = nn.ModuleDict(modules)
        self.device = "cpu"
        self.optimizer = opt_class(self.modules.parameters())

    def compute_forward(self, batch, stage):
        batch_sig, batch_lab = batch
        # Running the encoder (prevent propagation to feature extraction)
        with torch.no_grad():
            feats, self.feat_lens = self.prepare_features(stage, batch_sig)
            predict = self.modules.model(feats)
        return {"predict": predict}

    def prepare_features(self, stage, wavs):
        wavs, wav_lens = wavs
        if stage == Stage.TRAIN:
            wavs = wavs + 0.01 * torch.randn_like(wavs)
        feats = self.modules.compute_features(wavs)
        feats = feats - feats.mean(dim=1, keepdim=True)
        return feats, wav_lens

    def compute_objectives(self, predictions, batch, stage):
        _, spkid = batch
        loss = F.cross_entropy(predictions["predict"], spkid)
        loss = Variable(loss, requires_grad=True)
        return loss

    def fit_batch(self, batch):
        outputs = self.compute_forward(batch, Stage.TRAIN)
        loss = self.compute_objectives(outputs, batch, Stage.TRAIN)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss.detach()

    def fit(self, epoch_counter, train_set):
        for epoch in epoch_counter:
            for batch in train_set:
                loss = self.fit_batch(batch)
            print(epoch, loss.item())


modules = {
    "compute_features": nn.Linear(40, 24),
    "model": nn.Sequential(nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 5)),
}
spk_id_brain = SpkIdBrain(modules, lambda params: torch.optim.Adam(params, lr=1e-3))
train_set = [((torch.randn(8, 40), torch.ones(8)), torch.randint(0, 5, (8,))) for _ in range(3)]
spk_id_brain.fit(range(2), train_set)
