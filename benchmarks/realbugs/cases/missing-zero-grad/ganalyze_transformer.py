import torch
import torch.nn as nn

torch.manual_seed(0)


class Generator(nn.Module):
    def __init__(self, dim_z, num_classes):
        super().__init__()
        self.fc = nn.Linear(dim_z + num_classes, 3 * 8 * 8)

    def forward(self, z, y):
        return torch.tanh(self.fc(torch.cat([z, y], 1))).view(-1, 3, 8, 8)


class Assessor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


class OneDirection(nn.Module):
    def __init__(self, dim_z):
        super(OneDirection, self).__init__()
        self.w = nn.Parameter(torch.randn(1, dim_z))

    def transform(self, z, y, step_sizes):
        return z + step_sizes * self.w


dim_z, num_classes, batch_size = 16, 5, 8
generator = Generator(dim_z, num_classes)
assessor = Assessor()
for p in list(generator.parameters()) + list(assessor.parameters()):
    p.requires_grad = False

model = OneDirection(dim_z)
optimizer = torch.optim.Adam(model.parameters(), lr=0.0002)
criterion = nn.MSELoss()


def step_loss(zs, ys, step_sizes):
    gan_images = generator(zs, ys)
    out_scores = assessor(gan_images)
    target_scores = torch.clamp(out_scores + step_sizes, 0, 1)
    z_transformed = model.transform(zs, ys, step_sizes)
    gan_images_transformed = generator(z_transformed, ys)
    out_scores_transformed = assessor(gan_images_transformed)
    return criterion(out_scores_transformed, target_scores)


zs = torch.randn(batch_size, dim_z)
ys = torch.eye(num_classes)[torch.randint(0, num_classes, (batch_size,))]
step_sizes = torch.rand(batch_size, 1) * 0.5
for batch_start in range(0, 8 * batch_size, batch_size):
    loss = step_loss(zs, ys, step_sizes)
    loss.backward()
    optimizer.step()
