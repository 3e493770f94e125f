import torch
import torch.nn as nn


class WordLSTM(nn.Module):
    def __init__(self, n_vocab, n_hidden=16, n_layers=2, drop_prob=0.3, lr=0.001):
        super().__init__()
        self.drop_prob = drop_prob
        self.n_layers = n_layers
        self.n_hidden = n_hidden
        self.lr = lr
        self.emb_layer = nn.Embedding(n_vocab, 8)
        self.lstm = nn.LSTM(8, n_hidden, n_layers, dropout=drop_prob, batch_first=True)
        self.dropout = nn.Dropout(drop_prob)
        self.fc = nn.Linear(n_hidden, n_vocab)

    def forward(self, x, hidden):
        embedded = self.emb_layer(x)
        lstm_output, hidden = self.lstm(embedded, hidden)
        out = self.dropout(lstm_output)
        out = out.reshape(-1, self.n_hidden)
        out = self.fc(out)
        return out, hidden

    def init_hidden(self, batch_size):
        weight = next(self.parameters()).data
        hidden = (weight.new(self.n_layers, batch_size, self.n_hidden).zero_(),
                  weight.new(self.n_layers, batch_size, self.n_hidden).zero_())
        return hidden


def get_batches(arr_x, arr_y, batch_size):
    prv = 0
    for n in range(batch_size, arr_x.shape[0], batch_size):
        x = arr_x[prv:n, :]
        y = arr_y[prv:n, :]
        prv = n
        yield x, y


def train(net, epochs=10, batch_size=32, lr=0.001, clip=1, print_every=32):
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    criterion = nn.CrossEntropyLoss()
    counter = 0
    net.train()
    for e in range(epochs):
        h = net.init_hidden(batch_size)
        for x, y in get_batches(x_int, y_int, batch_size):
            counter += 1
            inputs, targets = x, y
            h = tuple([each.data for each in h])
            net.zero_grad()
            output, h = net(inputs, h)
            loss = criterion(output, targets.view(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), clip)
            opt.step()
            if counter % print_every == 0:
                print("Epoch: {}/{}...".format(e + 1, epochs), "Step: {}...".format(counter))
    return loss.item()


torch.manual_seed(0)
n_vocab = 20
seq = torch.randint(0, n_vocab, (41 * 5,))
x_int, y_int = seq[:200].view(40, 5), seq[1:201].view(40, 5)
net = WordLSTM(n_vocab)
print(train(net, epochs=2, batch_size=8, print_every=4))
