import torch
import torch.nn as nn

torch.manual_seed(0)


def GDPPLoss(phiFake, phiReal, backward=True):
    def compute_diversity(phi):
        phi = nn.functional.normalize(phi, p=2, dim=1)
        SB = torch.mm(phi, phi.t())
        eigVals, eigVecs = torch.linalg.eigh(SB)
        return eigVals, eigVecs

    def normalize_min_max(eigVals):
        minV, maxV = torch.min(eigVals), torch.max(eigVals)
        if abs(minV - maxV) < 1e-10:
            return eigVals
        return (eigVals - minV) / (maxV - minV)

    fakeEigVals, fakeEigVecs = compute_diversity(phiFake)
    realEigVals, realEigVecs = compute_diversity(phiReal)
    magnitudeLoss = 0.0001 * nn.functional.mse_loss(target=realEigVals, input=fakeEigVals)
    structureLoss = -torch.sum(torch.mul(fakeEigVecs, realEigVecs), 0)
    normalizedRealEigVals = normalize_min_max(realEigVals)
    weightedStructureLoss = torch.sum(torch.mul(normalizedRealEigVals, structureLoss))
    gdppLoss = magnitudeLoss + weightedStructureLoss
    if backward:
        gdppLoss.backward()
    return gdppLoss.item()


class Discriminator(nn.Module):
    def __init__(self, dimIn=12, dimFeat=6):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(dimIn, dimFeat), nn.LeakyReLU(0.2))
        self.decision = nn.Linear(dimFeat, 1)

    def forward(self, x, getFeature=False):
        phi = self.features(x)
        out = self.decision(phi)
        if getFeature:
            return out, phi
        return out


class WGANGP:
    def getCriterion(self, input, status):
        if status:
            return -input[:, 0].sum()
        return input[:, 0].sum()


class BaseGAN:
    def __init__(self, dimLatentVector=4, GDPP=True):
        self.dimLatentVector = dimLatentVector
        self.GDPP = GDPP
        self.netG = nn.Sequential(nn.Linear(dimLatentVector, 16), nn.ReLU(), nn.Linear(16, 12))
        self.netD = Discriminator()
        self.optimizerG = torch.optim.Adam(self.netG.parameters(), lr=1e-3)
        self.optimizerD = torch.optim.Adam(self.netD.parameters(), lr=1e-3)
        self.lossCriterion = WGANGP()

    def buildNoiseData(self, n):
        return torch.randn(n, self.dimLatentVector)

    def optimizeParameters(self, input_batch):
        allLosses = {}
        self.real_input = input_batch
        n_samples = self.real_input.size(0)

        self.optimizerD.zero_grad()
        predRealD = self.netD(self.real_input, False)
        lossD = self.lossCriterion.getCriterion(predRealD, True)
        inputLatent = self.buildNoiseData(n_samples)
        predFakeG = self.netG(inputLatent).detach()
        predFakeD = self.netD(predFakeG, False)
        lossD += self.lossCriterion.getCriterion(predFakeD, False)
        lossD.backward()
        self.optimizerD.step()
        allLosses["lossD"] = lossD.item()

        self.optimizerG.zero_grad()
        self.optimizerD.zero_grad()
        inputNoise = self.buildNoiseData(n_samples)
        predFakeG = self.netG(inputNoise)
        predFakeD, phiGFake = self.netD(predFakeG, True)
        lossGFake = self.lossCriterion.getCriterion(predFakeD, True)
        lossGFake.backward()
        allLosses["lossG_fake"] = lossGFake.item()

        if self.GDPP:
            _, phiDReal = self.netD.forward(self.real_input, True)
            allLosses["lossG_GDPP"] = GDPPLoss(phiDReal, phiGFake, backward=True)

        self.optimizerG.step()
        return allLosses


model = BaseGAN()
for it in range(3):
    losses = model.optimizeParameters(torch.randn(8, 12))
