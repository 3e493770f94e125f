import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune

device = torch.device("cpu")


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        # 1 input image channel, 6 output channels, 5x5 square conv kernel
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)  # 5x5 image dimension
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def train(model, optimizer, data, target, steps):
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    return loss.item()


torch.manual_seed(0)
model = LeNet().to(device=device)
data, target = torch.randn(16, 1, 32, 32), torch.randint(0, 10, (16,))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
print("dense", train(model, optimizer, data, target, 5))

module = model.conv1
prune.random_unstructured(module, name="weight", amount=0.3)
prune.l1_unstructured(module, name="bias", amount=3)
prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)

parameters_to_prune = (
    (model.conv2, 'weight'),
    (model.fc1, 'weight'),
    (model.fc2, 'weight'),
    (model.fc3, 'weight'),
)
prune.global_unstructured(
    parameters_to_prune,
    pruning_method=prune.L1Unstructured,
    amount=0.2,
)
print("Sparsity in fc1.weight: {:.2f}%".format(
    100. * float(torch.sum(model.fc1.weight == 0)) / float(model.fc1.weight.nelement())))

# fine-tune the pruned network: the optimizer still holds the same Parameters (now *_orig)
print("pruned", train(model, optimizer, data, target, 5))
print("fc1 still sparse:", float(torch.sum(model.fc1.weight == 0)) / model.fc1.weight.nelement())

for module, name in parameters_to_prune + ((model.conv1, 'weight'), (model.conv1, 'bias')):
    prune.remove(module, name)
print(list(dict(model.named_parameters()).keys())[:4])
