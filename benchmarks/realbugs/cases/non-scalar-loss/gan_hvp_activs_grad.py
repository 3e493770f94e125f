import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Generator(nn.Module):
    def __init__(self, code_dim=16):
        super().__init__()
        self.fc = nn.Linear(code_dim, 3 * 8 * 8)

    def visualize(self, code):
        return torch.tanh(self.fc(code)).view(-1, 3, 8, 8) * 0.5 + 0.5


class Objective(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, img):
        return self.conv(img)[:, :, 4, 4].mean(dim=1)


class GANForwardHVPOperator:
    def __init__(self, model, code, objective, preprocess=lambda img: F.interpolate(img, size=(16, 16)), epsilon=1e-2):
        self.model = model
        self.objective = objective
        self.preprocess = preprocess
        self.epsilon = epsilon
        self.code = code.detach()

    def zero_grad(self):
        pass

    def apply(self, vec):
        vecnorm = vec.norm()
        perturb_vecs = self.code + self.epsilon * torch.stack([vec / vecnorm, -vec / vecnorm])
        perturb_vecs.requires_grad_(True)
        img = self.model.visualize(perturb_vecs)
        resz_img = self.preprocess(img)
        activs = self.objective(resz_img)
        ftgrad_both = torch.autograd.grad(activs, perturb_vecs, retain_graph=False, create_graph=False, only_inputs=True)[0]
        hvp = (ftgrad_both[0, :] - ftgrad_both[1, :]) / (2 * self.epsilon)
        return hvp * vecnorm


G = Generator()
objective = Objective()
feat = torch.randn(1, 16)
op = GANForwardHVPOperator(G, feat, objective)
eigvec = torch.randn(16)
for it in range(3):
    eigvec = op.apply(eigvec)
    eigvec = eigvec / eigvec.norm()
