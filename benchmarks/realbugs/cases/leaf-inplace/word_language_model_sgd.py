import math

import torch
import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers = nlayers
        self.nhid = nhid

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        return decoded, hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


torch.manual_seed(0)
ntokens = 30
bptt = 5
lr = 20
clip = 0.25
batch_size = 4
train_data = batchify(torch.randint(0, ntokens, (200,)), batch_size)
model = RNNModel(ntokens, 16, 16, 2)
criterion = nn.NLLLoss()


def train():
    model.train()
    total_loss = 0.
    hidden = model.init_hidden(batch_size)
    for batch, i in enumerate(range(0, 3 * bptt, bptt)):
        data, targets = get_batch(train_data, i, bptt)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        output = torch.log_softmax(output, dim=-1)
        loss = criterion(output.view(-1, ntokens), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
    return total_loss


for epoch in range(1, 3):
    cur_loss = train()
    print("epoch {} ppl {:8.2f}".format(epoch, math.exp(cur_loss / 3)))
