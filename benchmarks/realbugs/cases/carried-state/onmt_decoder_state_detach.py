import torch
import torch.nn as nn

torch.manual_seed(0)


class DecoderState(object):
    def detach(self):
        for h in self._all:
            if h is not None:
                h = h.detach()


class RNNDecoderState(DecoderState):
    def __init__(self, hidden_size, rnnstate):
        if not isinstance(rnnstate, tuple):
            self.hidden = (rnnstate,)
        else:
            self.hidden = rnnstate
        self.coverage = None
        batch_size = self.hidden[0].size(1)
        self.input_feed = torch.zeros(batch_size, hidden_size)

    @property
    def _all(self):
        return self.hidden + (self.input_feed,)

    def update_state(self, rnnstate, input_feed):
        if not isinstance(rnnstate, tuple):
            self.hidden = (rnnstate,)
        else:
            self.hidden = rnnstate
        self.input_feed = input_feed


class InputFeedDecoder(nn.Module):
    def __init__(self, vocab, emb_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.embeddings = nn.Embedding(vocab, emb_size)
        self.rnn = nn.GRUCell(emb_size + hidden_size, hidden_size)
        self.attn_out = nn.Linear(2 * hidden_size, hidden_size)

    def init_decoder_state(self, encoder_final):
        return RNNDecoderState(self.hidden_size, encoder_final)

    def forward(self, tgt, context, state):
        hidden = state.hidden[0][0]
        input_feed = state.input_feed
        outputs = []
        for emb_t in self.embeddings(tgt).split(1):
            rnn_input = torch.cat([emb_t.squeeze(0), input_feed], 1)
            hidden = self.rnn(rnn_input, hidden)
            align = torch.softmax((context * hidden.unsqueeze(0)).sum(2), dim=0)
            c = (align.unsqueeze(2) * context).sum(0)
            input_feed = torch.tanh(self.attn_out(torch.cat([c, hidden], 1)))
            outputs.append(input_feed)
        state.update_state(hidden.unsqueeze(0), input_feed)
        return torch.stack(outputs), state


class NMTModel(nn.Module):
    def __init__(self, encoder, decoder, generator):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.generator = generator

    def forward(self, src, tgt, dec_state=None):
        context, enc_hidden = self.encoder(src)
        enc_state = self.decoder.init_decoder_state(enc_hidden)
        out, dec_state = self.decoder(tgt, context,
                                      enc_state if dec_state is None else dec_state)
        return out, dec_state


class RNNEncoder(nn.Module):
    def __init__(self, vocab, emb_size, hidden_size):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, emb_size)
        self.rnn = nn.GRU(emb_size, hidden_size)

    def forward(self, src):
        return self.rnn(self.embeddings(src))


vocab, emb_size, hidden_size = 20, 8, 16
model = NMTModel(RNNEncoder(vocab, emb_size, hidden_size),
                 InputFeedDecoder(vocab, emb_size, hidden_size),
                 nn.Linear(hidden_size, vocab))
optim = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()

trunc_size = 3
for i in range(2):
    src = torch.randint(0, vocab, (7, 4))
    tgt = torch.randint(0, vocab, (10, 4))
    target_size = tgt.size(0)
    dec_state = None
    model.zero_grad()
    for j in range(0, target_size - 1, trunc_size):
        tgt_in = tgt[j: j + trunc_size]
        tgt_out = tgt[j + 1: j + 1 + trunc_size]
        outputs, dec_state = model(src, tgt_in[:tgt_out.size(0)], dec_state)
        scores = model.generator(outputs)
        loss = criterion(scores.view(-1, vocab), tgt_out.reshape(-1))
        loss.backward()
        if dec_state is not None:
            dec_state.detach()
    optim.step()
    print(i, loss.item())
