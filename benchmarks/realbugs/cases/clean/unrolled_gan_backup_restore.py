import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class data_generator(object):
    def __init__(self):
        n = 8
        radius = 2
        std = 0.02
        delta_theta = 2 * np.pi / n

        centers_x = []
        centers_y = []
        for i in range(n):
            centers_x.append(radius * np.cos(i * delta_theta))
            centers_y.append(radius * np.sin(i * delta_theta))

        centers_x = np.expand_dims(np.array(centers_x), 1)
        centers_y = np.expand_dims(np.array(centers_y), 1)
        self.centers = np.concatenate([centers_x, centers_y], 1)
        self.p = [1. / n for _ in range(n)]
        self.std = std
        self.size = 2
        self.n = n

    def random_distribution(self, p=None):
        if p is None:
            p = [np.random.uniform() for _ in range(self.n)]
            p = p / np.sum(p)
        self.p = p

    def sample(self, N):
        n = self.n
        std = self.std
        centers = self.centers

        ith_center = np.random.choice(n, N, p=self.p)
        sample_centers = centers[ith_center, :]
        sample_points = np.random.normal(loc=sample_centers, scale=std)
        return sample_points.astype('float32')


def noise_sampler(N, z_dim):
    return np.random.normal(size=[N, z_dim]).astype('float32')


def d_loop():
    d_optimizer.zero_grad()

    d_real_data = torch.from_numpy(dset.sample(minibatch_size))
    d_real_decision = D(d_real_data)
    target = torch.ones_like(d_real_decision)
    d_real_error = criterion(d_real_decision, target)

    d_gen_input = torch.from_numpy(noise_sampler(minibatch_size, g_inp))

    with torch.no_grad():
        d_fake_data = G(d_gen_input)
    d_fake_decision = D(d_fake_data)
    target = torch.zeros_like(d_fake_decision)
    d_fake_error = criterion(d_fake_decision, target)

    d_loss = d_real_error + d_fake_error
    d_loss.backward()
    d_optimizer.step()
    return d_real_error.cpu().item(), d_fake_error.cpu().item()


def d_unrolled_loop(d_gen_input=None):
    d_optimizer.zero_grad()

    d_real_data = torch.from_numpy(dset.sample(minibatch_size))
    d_real_decision = D(d_real_data)
    target = torch.ones_like(d_real_decision)
    d_real_error = criterion(d_real_decision, target)

    if d_gen_input is None:
        d_gen_input = torch.from_numpy(noise_sampler(minibatch_size, g_inp))

    with torch.no_grad():
        d_fake_data = G(d_gen_input)
    d_fake_decision = D(d_fake_data)
    target = torch.zeros_like(d_fake_decision)
    d_fake_error = criterion(d_fake_decision, target)

    d_loss = d_real_error + d_fake_error
    d_loss.backward(create_graph=True)
    d_optimizer.step()
    return d_real_error.cpu().item(), d_fake_error.cpu().item()


def g_loop():
    g_optimizer.zero_grad()

    gen_input = torch.from_numpy(noise_sampler(minibatch_size, g_inp))

    if unrolled_steps > 0:
        backup = copy.deepcopy(D)
        for i in range(unrolled_steps):
            d_unrolled_loop(d_gen_input=gen_input)

    g_fake_data = G(gen_input)
    dg_fake_decision = D(g_fake_data)
    target = torch.ones_like(dg_fake_decision)
    g_error = criterion(dg_fake_decision, target)
    g_error.backward()
    g_optimizer.step()

    if unrolled_steps > 0:
        D.load(backup)
        del backup

    return g_error.cpu().item()


def g_sample():
    with torch.no_grad():
        gen_input = torch.from_numpy(noise_sampler(minibatch_size, g_inp))
        g_fake_data = G(gen_input)
        return g_fake_data.cpu().numpy()


class Generator(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(Generator, self).__init__()
        self.map1 = nn.Linear(input_size, hidden_size)
        self.map2 = nn.Linear(hidden_size, hidden_size)
        self.map3 = nn.Linear(hidden_size, output_size)
        self.activation_fn = torch.tanh

    def forward(self, x):
        x = self.activation_fn(self.map1(x))
        x = self.activation_fn(self.map2(x))
        return self.map3(x)


class Discriminator(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(Discriminator, self).__init__()
        self.map1 = nn.Linear(input_size, hidden_size)
        self.map2 = nn.Linear(hidden_size, hidden_size)
        self.map3 = nn.Linear(hidden_size, output_size)
        self.activation_fn = F.relu

    def forward(self, x):
        x = self.activation_fn(self.map1(x))
        x = self.activation_fn(self.map2(x))
        return torch.sigmoid(self.map3(x))

    def load(self, backup):
        for m_from, m_to in zip(backup.modules(), self.modules()):
            if isinstance(m_to, nn.Linear):
                m_to.weight.data = m_from.weight.data.clone()
                if m_to.bias is not None:
                    m_to.bias.data = m_from.bias.data.clone()


np.random.seed(0)
torch.manual_seed(0)
dset = data_generator()
dset.random_distribution()

z_dim = 16
g_inp = z_dim
g_hid = 32
g_out = dset.size

d_inp = g_out
d_hid = 32
d_out = 1

minibatch_size = 32

unrolled_steps = 3
d_learning_rate = 1e-4
g_learning_rate = 1e-3
optim_betas = (0.5, 0.999)
num_iterations = 4
log_interval = 2
d_steps = 1
g_steps = 1

G = Generator(input_size=g_inp, hidden_size=g_hid, output_size=g_out)
D = Discriminator(input_size=d_inp, hidden_size=d_hid, output_size=d_out)
criterion = nn.BCELoss()
d_optimizer = optim.Adam(D.parameters(), lr=d_learning_rate, betas=optim_betas)
g_optimizer = optim.Adam(G.parameters(), lr=g_learning_rate, betas=optim_betas)

samples = []
for it in range(num_iterations):
    d_infos = []
    for d_index in range(d_steps):
        d_info = d_loop()
        d_infos.append(d_info)
    d_infos = np.mean(d_infos, 0)
    d_real_loss, d_fake_loss = d_infos

    g_infos = []
    for g_index in range(g_steps):
        g_info = g_loop()
        g_infos.append(g_info)
    g_infos = np.mean(g_infos)
    g_loss = g_infos

    if it % log_interval == 0:
        g_fake_data = g_sample()
        samples.append(g_fake_data)
        print(d_real_loss, d_fake_loss, g_loss)
