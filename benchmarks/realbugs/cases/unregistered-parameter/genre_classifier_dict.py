import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class VoxelEncoder(nn.Module):
    def __init__(self, ndims=32):
        super().__init__()
        self.conv1 = nn.Conv3d(1, 4, 3, stride=2, padding=1)
        self.conv2 = nn.Conv3d(4, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 * 2 * 2 * 2, ndims)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc(x.flatten(1))


class FC(nn.Module):
    def __init__(self, in_dims, out_dims):
        super().__init__()
        self.linear = nn.Linear(in_dims, out_dims)

    def forward(self, x):
        return F.relu(self.linear(x))


class ClassificationLayer(nn.Module):
    def __init__(self, in_dims, n_classes):
        super().__init__()
        self.linear = nn.Linear(in_dims, n_classes)

    def forward(self, x):
        return self.linear(x)


class Net(nn.Module):
    def __init__(self, npf, npc, ndims):
        super().__init__()
        self.Encoder = VoxelEncoder(ndims=ndims)
        self.classifier = {}
        self.fc = FC(in_dims=ndims, out_dims=100)
        for i in range(2):
            self.classifier[i] = ClassificationLayer(100, npc[i])

    def forward(self, voxels):
        feat = self.fc(self.Encoder(voxels))
        return [self.classifier[i](feat) for i in range(2)]


net = Net(npf=2, npc=[5, 3], ndims=32)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
voxels = torch.rand(16, 1, 8, 8, 8)
labels = [torch.randint(0, 5, (16,)), torch.randint(0, 3, (16,))]

for epoch in range(3):
    for i in range(0, 16, 8):
        outputs = net(voxels[i:i + 8])
        loss = sum(F.cross_entropy(out, lab[i:i + 8]) for out, lab in zip(outputs, labels))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
