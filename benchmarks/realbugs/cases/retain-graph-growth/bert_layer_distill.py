import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Layer(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)

    def forward(self, x):
        return torch.tanh(self.dense(x)) + x


class Encoder(nn.Module):
    def __init__(self, hidden, num_layers):
        super().__init__()
        self.layer = nn.ModuleList([Layer(hidden) for _ in range(num_layers)])


class TinyBert(nn.Module):
    def __init__(self, vocab=20, hidden=8, num_layers=4):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, hidden)
        self.encoder = Encoder(hidden, num_layers)
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids):
        h = self.embeddings(input_ids)
        hidden_states = [h]
        for layer in self.encoder.layer:
            h = layer(h)
            hidden_states.append(h)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        return h, pooled, None, tuple(hidden_states)


t_model = TinyBert(num_layers=12)
s_model = TinyBert(num_layers=6)
optimizer = torch.optim.Adam(s_model.parameters(), lr=1e-3)


class Args:
    encoder_layers = [1, 3, 5, 7, 9, 11]


args = Args()

for step in range(2):
    inputs = {"input_ids": torch.randint(0, 20, (2, 6))}
    with torch.no_grad():
        t_outputs = t_model(**inputs)
    s_outputs = s_model(**inputs)
    t_result = t_outputs
    encoder_layers = args.encoder_layers

    loss = torch.nn.KLDivLoss(reduction='batchmean')
    batch, row, col = s_outputs[3][1].size()

    optimizer.zero_grad()
    for i, k in enumerate(encoder_layers):
        output = loss(F.log_softmax(s_outputs[3][i + 1], dim=2).view(batch * row, 1, col),
                      F.softmax(t_result[3][k + 1], dim=2).view(batch * row, 1, col))
        for name, p in s_model.named_parameters():
            if "layer." + str(i - 1) in name:
                p.requires_grad = False
        output.backward(retain_graph=True)
    optimizer.step()
