import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

max_features = 20
maxlen = 6
batch_size = 4
hidden_dim = 16
c_dim = 2
lambda_c = 0.1
lambda_z = 0.1
BOS = 1


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(max_features, hidden_dim)
        self.lstm = nn.LSTM(hidden_dim, hidden_dim)
        self.mean = nn.Linear(hidden_dim, hidden_dim - c_dim)
        self.sigma = nn.Linear(hidden_dim, hidden_dim - c_dim)

    def init_hidden(self, n):
        return (torch.zeros(1, n, hidden_dim), torch.zeros(1, n, hidden_dim))

    def forward(self, x, hidden, dont_pass_emb=False):
        emb = x if dont_pass_emb else self.emb(x).permute(1, 0, 2)
        _, (h, c) = self.lstm(emb, hidden)
        self.z_mean = self.mean(h[0])
        self.z_sigma = self.sigma(h[0])
        z = self.z_mean + torch.exp(self.z_sigma / 2) * torch.randn_like(self.z_sigma)
        return (z.unsqueeze(0), c)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(max_features, hidden_dim, bias=False)
        self.cell = nn.LSTMCell(hidden_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, max_features)

    def init_hidden_c_for_lstm(self, n):
        return torch.zeros(1, n, hidden_dim - c_dim)

    def one_hot_to_word_emb(self, one_hot):
        return self.emb(one_hot).permute(1, 0, 2)

    def forward(self, word, hidden, low_temp=True, one_hot_input=True):
        h, c = self.cell(self.emb(word), (hidden[0][0], hidden[1][0]))
        pre_soft = self.out(h)
        output = F.softmax(pre_soft / (0.1 if low_temp else 1.0), dim=1)
        return output, (h.unsqueeze(0), c.unsqueeze(0)), pre_soft


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(max_features, hidden_dim, bias=False)
        self.fc = nn.Linear(hidden_dim, c_dim)

    def forward(self, x, dont_pass_emb=False):
        return self.fc(self.emb(x).mean(dim=1))


def latent_loss(z_mean, z_sigma):
    return -0.5 * torch.mean(1 + z_sigma - z_mean ** 2 - z_sigma.exp())


encoder, decoder, discriminator = Encoder(), Decoder(), Discriminator()
criterion = nn.CrossEntropyLoss()
e_opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
g_opt = torch.optim.Adam(decoder.parameters(), lr=1e-3)
d_opt = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
x_train = torch.randint(0, max_features, (8, maxlen))
y_train = torch.randint(0, c_dim, (8,))

for epoch_index in range(1):
    for batch, index in enumerate(range(0, len(x_train) - 1, batch_size)):
        encoder.zero_grad()
        decoder.zero_grad()
        vae_loss = 0
        input_data, output_data = x_train[index:index + batch_size], y_train[index:index + batch_size]
        enc_hidden = encoder.init_hidden(len(input_data))
        enc_hidden = encoder(input_data, enc_hidden)
        var_c = F.one_hot(output_data, c_dim).float()
        cat_hidden = (torch.cat([enc_hidden[0][0], var_c], dim=1).unsqueeze(0),
                      torch.cat([decoder.init_hidden_c_for_lstm(len(input_data))[0], var_c], dim=1).unsqueeze(0))
        batch_init_word = torch.zeros(batch_size, max_features)
        batch_init_word[:, BOS] = 1
        input_data = input_data.permute(1, 0)
        for index in range(maxlen - 1):
            if 'next_word' in locals():
                word = next_word.squeeze(1)
                output, cat_hidden, pre_soft = decoder(word, cat_hidden, low_temp=True, one_hot_input=True)
            else:
                word = batch_init_word
                output, cat_hidden, pre_soft = decoder(word, cat_hidden, low_temp=True, one_hot_input=True)
            next_word = output
            correct_word = input_data[index + 1]
            vae_loss += criterion(pre_soft.view(-1, max_features), correct_word)
            if len(batch_init_word.size()) == 2:
                batch_init_word = batch_init_word.unsqueeze(1)
            if len(next_word.size()) == 2:
                next_word = next_word.unsqueeze(1)
            batch_init_word = torch.cat([batch_init_word, next_word], dim=1)
        ll = latent_loss(encoder.z_mean, encoder.z_sigma)
        generated_sentence = batch_init_word
        discriminator.eval()
        logit = discriminator(generated_sentence, dont_pass_emb=True)
        l_attr_c = criterion(logit, output_data)
        encoder.eval()
        generated_sentence = decoder.one_hot_to_word_emb(generated_sentence)
        encoded_gen = encoder.init_hidden(len(generated_sentence[0]))
        encoded_gen = encoder(generated_sentence, encoded_gen, dont_pass_emb=True)
        l_attr_z = latent_loss(encoder.z_mean, encoder.z_sigma)

        total_vae_loss = vae_loss + ll
        extra_decoder_loss = lambda_c * l_attr_c + lambda_z * l_attr_z
        total_vae_loss.backward()
        e_opt.step()
        extra_decoder_loss.backward()
        g_opt.step()
