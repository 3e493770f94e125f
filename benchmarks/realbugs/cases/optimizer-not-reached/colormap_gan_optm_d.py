import torch
from torch import nn, optim
from torch.autograd import Variable

torch.manual_seed(0)
LEVELS = 4


class ColorMapGenerator(nn.Module):
    def __init__(self):
        super(ColorMapGenerator, self).__init__()
        self.w = nn.Parameter(torch.ones((LEVELS * LEVELS * LEVELS, 3)), requires_grad=True)
        self.k = nn.Parameter(torch.zeros((LEVELS * LEVELS * LEVELS, 3)), requires_grad=True)

    def forward(self, x):
        _, _, h, w = x.shape
        x = x.view((-1, 3))
        inds = (x[:, 0] * LEVELS * LEVELS + x[:, 1] * LEVELS + x[:, 2]).long()
        return torch.tanh(x * self.w[inds, :] + self.k[inds, :]).view((-1, 3, h, w))


class ColorMapDiscriminator(nn.Module):
    def __init__(self):
        super(ColorMapDiscriminator, self).__init__()
        self.conv1 = nn.Sequential(
            nn.Conv2d(3, 8, 4, 2),
            nn.LeakyReLU(0.2, inplace=True),
        )
        self.conv2 = nn.Sequential(
            nn.Conv2d(8, 1, 3, 1),
            nn.AdaptiveAvgPool2d(1),
        )

    def forward(self, x):
        x = self.conv1(x)
        x = self.conv2(x)
        return x.view((-1, 1))


class ColorMatcher(object):
    def __init__(self, lr_g=5e-4, lr_d=1e-4):
        self.generator = ColorMapGenerator()
        self.discriminator = ColorMapDiscriminator()
        self.optm_g = optim.Adam(self.generator.parameters(), lr=lr_g)
        self.optm_d = optim.Adam(self.generator.parameters(), lr=lr_d)
        self.criterion = nn.MSELoss()

    def fit_helper(self, source_loader, target_loader, device, total_epoch=2):
        self.generator.to(device)
        self.discriminator.to(device)
        self.criterion.to(device)
        for epoch in range(total_epoch):
            for img_cnt, image_target in enumerate(target_loader):
                image_source = source_loader[img_cnt]
                image_source = Variable(image_source, requires_grad=True).to(device)
                image_target = Variable(image_target, requires_grad=True).to(device)

                valid = Variable(torch.FloatTensor(image_source.shape[0], 1).fill_(1.0), requires_grad=False).to(device)
                fake = Variable(torch.FloatTensor(image_source.shape[0], 1).fill_(0.0), requires_grad=False).to(device)

                self.optm_g.zero_grad()
                fake_imgs = self.generator(image_source)
                g_loss = self.criterion(self.discriminator(fake_imgs), valid)
                g_loss.backward()
                self.optm_g.step()

                self.optm_d.zero_grad()
                real_loss = self.criterion(self.discriminator(image_target), valid)
                fake_loss = self.criterion(self.discriminator(fake_imgs.detach()), fake)
                d_loss = 0.5 * (real_loss + fake_loss)
                d_loss.backward()
                self.optm_d.step()
            print('loss_d: {:.3f}\tloss_g: {:.3f}'.format(d_loss.item(), g_loss.item()))


source_loader = [torch.randint(0, LEVELS, (2, 3, 8, 8)).float() for _ in range(3)]
target_loader = [torch.rand(2, 3, 8, 8) * 2 - 1 for _ in range(3)]
color_matcher = ColorMatcher()
color_matcher.fit_helper(source_loader, target_loader, torch.device('cpu'))
