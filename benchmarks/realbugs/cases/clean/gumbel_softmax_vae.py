import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F


def sample_gumbel(shape, eps=1e-20):
    U = torch.rand(shape)
    return -torch.log(-torch.log(U + eps) + eps)


def gumbel_softmax_sample(logits, temperature):
    y = logits + sample_gumbel(logits.size())
    return F.softmax(y / temperature, dim=-1)


def gumbel_softmax(logits, temperature):
    """
    ST-gumple-softmax
    input: [*, n_class]
    return: flatten --> [*, n_class] an one-hot vector
    """
    y = gumbel_softmax_sample(logits, temperature)
    shape = y.size()
    _, ind = y.max(dim=-1)
    y_hard = torch.zeros_like(y).view(-1, shape[-1])
    y_hard.scatter_(1, ind.view(-1, 1), 1)
    y_hard = y_hard.view(*shape)
    y_hard = (y_hard - y).detach() + y
    return y_hard.view(-1, latent_dim * categorical_dim)


class VAE_gumbel(nn.Module):
    def __init__(self, temp):
        super(VAE_gumbel, self).__init__()

        self.fc1 = nn.Linear(64, 48)
        self.fc2 = nn.Linear(48, 32)
        self.fc3 = nn.Linear(32, latent_dim * categorical_dim)

        self.fc4 = nn.Linear(latent_dim * categorical_dim, 32)
        self.fc5 = nn.Linear(32, 48)
        self.fc6 = nn.Linear(48, 64)

        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()

    def encode(self, x):
        h1 = self.relu(self.fc1(x))
        h2 = self.relu(self.fc2(h1))
        return self.relu(self.fc3(h2))

    def decode(self, z):
        h4 = self.relu(self.fc4(z))
        h5 = self.relu(self.fc5(h4))
        return self.sigmoid(self.fc6(h5))

    def forward(self, x, temp):
        q = self.encode(x.view(-1, 64))
        q_y = q.view(q.size(0), latent_dim, categorical_dim)
        z = gumbel_softmax(q_y, temp)
        return self.decode(z), F.softmax(q_y, dim=-1).reshape(*q.size())


latent_dim = 6
categorical_dim = 4

temp_min = 0.5
ANNEAL_RATE = 0.00003

torch.manual_seed(1)
model = VAE_gumbel(1.0)
optimizer = optim.Adam(model.parameters(), lr=1e-3)
train_data = (torch.rand(8, 64) > 0.5).float()[torch.randint(0, 8, (320,))]


def loss_function(recon_x, x, qy):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction='sum') / x.shape[0]

    log_ratio = torch.log(qy * categorical_dim + 1e-20)
    KLD = torch.sum(qy * log_ratio, dim=-1).mean()

    return BCE + KLD


def train(epoch):
    model.train()
    train_loss = 0
    temp = 1.0
    for batch_idx in range(10):
        data = train_data[batch_idx * 32:(batch_idx + 1) * 32]
        optimizer.zero_grad()
        recon_batch, qy = model(data, temp)
        loss = loss_function(recon_batch, data, qy)
        loss.backward()
        train_loss += loss.item() * len(data)
        optimizer.step()
        if batch_idx % 100 == 1:
            temp = np.maximum(temp * np.exp(-ANNEAL_RATE * batch_idx), temp_min)
    return train_loss / len(train_data)


def test(epoch):
    model.eval()
    with torch.no_grad():
        recon_batch, qy = model(train_data, 1.0)
        return loss_function(recon_batch, train_data, qy).item()


before = test(0)
for epoch in range(1, 9):
    train(epoch)
print('test loss', before, '->', test(9))
