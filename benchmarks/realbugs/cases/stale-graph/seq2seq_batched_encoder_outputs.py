import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

random.seed(0)
torch.manual_seed(0)

MAX_LENGTH = 10


class EncoderRNN(nn.Module):
    def __init__(self, input_size, batch_size, hidden_size, n_layers=1):
        super(EncoderRNN, self).__init__()
        self.n_layers = n_layers
        self.batch_size = batch_size
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)

    def forward(self, input, hidden):
        embedded = self.embedding(input).transpose(0, 1)
        output = embedded
        for i in range(self.n_layers):
            output, hidden = self.gru(output, hidden)
        return output, hidden

    def initHidden(self):
        return torch.zeros(self.n_layers, self.batch_size, self.hidden_size)


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, n_layers=1, dropout_p=0.1, max_length=MAX_LENGTH):
        super(AttnDecoderRNN, self).__init__()
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attn = nn.Linear(hidden_size * 2, max_length)
        self.attn_combine = nn.Linear(hidden_size * 2, hidden_size)
        self.dropout = nn.Dropout(dropout_p)
        self.gru = nn.GRU(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input).view(1, batch_size, -1))
        attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
        encoder_outputs = encoder_outputs.transpose(1, 0)
        attn_applied = torch.bmm(attn_weights.unsqueeze(1), encoder_outputs).transpose(0, 1)
        output = torch.cat((embedded[0], attn_applied[0]), 1)
        output = self.attn_combine(output).unsqueeze(0)
        for i in range(self.n_layers):
            output = F.relu(output)
            output, hidden = self.gru(output, hidden)
        output = F.log_softmax(self.out(output[0]), dim=1)
        return output, hidden, attn_weights


def batchify(pairs_sorted, batch_size):
    num_batches = len(pairs_sorted) // batch_size
    while True:
        for i in range(num_batches):
            pairs_result = pairs_sorted[i * batch_size:(i + 1) * batch_size]
            encoding_sentences = [pair[0] for pair in pairs_result]
            max_encoding_length = max(len(s) for s in encoding_sentences)
            encoding_sentences = [s + [0] * (max_encoding_length - len(s)) + [1] for s in encoding_sentences]
            decoding_sentences = [pair[1] for pair in pairs_result]
            max_decoding_length = max(len(s) for s in decoding_sentences)
            decoding_sentences = [s + [0] * (max_decoding_length - len(s)) + [1] for s in decoding_sentences]
            decoding_mask = [[0 if a == 0 else 1 for a in s] for s in decoding_sentences]
            yield torch.LongTensor(encoding_sentences), torch.LongTensor(decoding_sentences), \
                torch.LongTensor(decoding_mask)


def train(encoder_sentences, decoder_sentences, decoder_mask, encoder, decoder, encoder_optimizer,
          decoder_optimizer, max_len=MAX_LENGTH):
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()
    encoder_outputs, encoder_hidden = encoder(encoder_sentences, encoder.initHidden())

    encoder_outputs_for_decoder = torch.zeros(max_len, batch_size, hidden_size)
    for i in range(output_from_encoder.size(0)):
        encoder_outputs_for_decoder[i] = output_from_encoder[i]

    decoder_input = torch.LongTensor([2] * batch_size).view(-1, 1)
    decoder_hidden = encoder_hidden
    decoding_len = decoder_sentences.size()[1]

    loss = 0
    for i in range(decoding_len):
        output_from_decoder, decoder_hidden, decoder_attention = decoder(
            decoder_input, decoder_hidden, encoder_outputs_for_decoder)
        tmp = decoder_sentences[:, i].contiguous().view(-1, 1)
        word_loss = output_from_decoder.gather(1, tmp) * decoder_mask[:, i].float().contiguous().view(-1, 1)
        loss += -1 * word_loss.sum()
        decoder_input = decoder_sentences[:, i].contiguous().view(-1, 1)

    loss.backward()
    encoder_optimizer.step()
    decoder_optimizer.step()
    return loss.item() / decoding_len


batch_size = 4
hidden_size = 16
input_size = 10
output_size = 10

pairs = [([random.randint(3, 9) for _ in range(random.randint(1, 6))],
          [random.randint(3, 9) for _ in range(random.randint(1, 6))]) for _ in range(12)]
pairs_sorted = sorted(pairs, key=lambda p: len(p[0]))
batch_gen = batchify(pairs_sorted, batch_size)

encoder = EncoderRNN(input_size, hidden_size=hidden_size, batch_size=batch_size)
attn_decoder1 = AttnDecoderRNN(hidden_size, output_size, dropout_p=0.1)

en_sen, dec_sen, dec_mask = next(batch_gen)
output_from_encoder, hidden = encoder(en_sen, encoder.initHidden())
print(output_from_encoder.size(), hidden.size())

encoder_optimizer = optim.SGD(encoder.parameters(), lr=0.01)
decoder_optimizer = optim.SGD(attn_decoder1.parameters(), lr=0.01)
for it in range(3):
    en_sen, dec_sen, dec_mask = next(batch_gen)
    loss = train(en_sen, dec_sen, dec_mask, encoder, attn_decoder1, encoder_optimizer, decoder_optimizer)
    print(it, loss)
