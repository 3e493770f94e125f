import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def create_sinusoidal_embeddings(nb_p, dim, E):
    theta = torch.tensor([
        [p / (10000 ** (2 * (j // 2) / dim)) for j in range(dim)]
        for p in range(nb_p)
    ])
    E[:, 0::2] = torch.FloatTensor(torch.sin(theta[:, 0::2]))
    E[:, 1::2] = torch.FloatTensor(torch.cos(theta[:, 1::2]))
    E.detach_()
    E.requires_grad = False


class Embeddings(nn.Module):
    def __init__(self, d_model, vocab_size, max_position_embeddings):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, d_model, padding_idx=1)
        self.position_embeddings = nn.Embedding(max_position_embeddings, d_model)
        create_sinusoidal_embeddings(
            nb_p=max_position_embeddings,
            dim=d_model,
            E=self.position_embeddings.weight,
        )
        self.LayerNorm = nn.LayerNorm(d_model, eps=1e-12)

    def forward(self, input_ids):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long)
        position_ids = position_ids.unsqueeze(0).expand_as(input_ids)
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        return self.LayerNorm(embeddings)


class TransformerClassifier(nn.Module):
    def __init__(self, d_model, input_vocab_size, max_position_embeddings, num_answers):
        super().__init__()
        self.embedding = Embeddings(d_model, input_vocab_size, max_position_embeddings)
        self.encoder = nn.TransformerEncoderLayer(d_model, 2, 64, batch_first=True)
        self.dense = nn.Linear(d_model, num_answers)

    def forward(self, x):
        x = self.encoder(self.embedding(x))
        return self.dense(x.max(dim=1)[0])


model = TransformerClassifier(d_model=32, input_vocab_size=100, max_position_embeddings=20, num_answers=2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randint(0, 100, (8, 20))
y = torch.randint(0, 2, (8,))
for epoch in range(3):
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
