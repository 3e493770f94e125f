import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn import init


class SkipGramModel(nn.Module):

    def __init__(self, emb_size, emb_dimension):
        super(SkipGramModel, self).__init__()
        self.emb_size = emb_size
        self.emb_dimension = emb_dimension
        self.u_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)
        self.v_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=True)

        initrange = 1.0 / self.emb_dimension
        init.uniform_(self.u_embeddings.weight.data, -initrange, initrange)
        init.constant_(self.v_embeddings.weight.data, 0)

    def forward(self, pos_u, pos_v, neg_v):
        emb_u = self.u_embeddings(pos_u)
        emb_v = self.v_embeddings(pos_v)
        emb_neg_v = self.v_embeddings(neg_v)

        score = torch.sum(torch.mul(emb_u, emb_v), dim=1)
        score = torch.clamp(score, max=10, min=-10)
        score = -F.logsigmoid(score)

        neg_score = torch.bmm(emb_neg_v, emb_u.unsqueeze(2)).squeeze()
        neg_score = torch.clamp(neg_score, max=10, min=-10)
        neg_score = -torch.sum(F.logsigmoid(-neg_score), dim=1)

        return torch.mean(score + neg_score)

    def embeddings(self):
        return self.u_embeddings.weight.cpu().data.numpy()


class Word2vecDataset:
    def __init__(self, corpus, vocab_size, window_size, negatives=5, batch_size=16):
        self.batches = []
        rng = np.random.RandomState(0)
        pairs = [(corpus[i], corpus[j]) for i in range(len(corpus))
                 for j in range(max(0, i - window_size), min(len(corpus), i + window_size + 1)) if i != j]
        for k in range(0, len(pairs), batch_size):
            chunk = pairs[k:k + batch_size]
            pos_u = torch.LongTensor([u for u, _ in chunk])
            pos_v = torch.LongTensor([v for _, v in chunk])
            neg_v = torch.LongTensor(rng.randint(0, vocab_size, (len(chunk), negatives)))
            self.batches.append((pos_u, pos_v, neg_v))

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        return iter(self.batches)


class Word2VecTrainer:
    def __init__(self, corpus, emb_size, emb_dimension=16, batch_size=16, window_size=2, iterations=2,
                 initial_lr=0.001):
        self.dataloader = Word2vecDataset(corpus, emb_size, window_size, batch_size=batch_size)
        self.emb_size = emb_size
        self.emb_dimension = emb_dimension
        self.batch_size = batch_size
        self.iterations = iterations
        self.initial_lr = initial_lr
        self.skip_gram_model = SkipGramModel(self.emb_size, self.emb_dimension)
        self.device = torch.device("cpu")

    def train(self):

        for iteration in range(self.iterations):

            print("Iteration: " + str(iteration + 1))
            optimizer = optim.SparseAdam(list(self.skip_gram_model.parameters()), lr=self.initial_lr)
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, len(self.dataloader))

            running_loss = 0.0
            for i, sample_batched in enumerate(self.dataloader):

                if len(sample_batched[0]) > 1:
                    pos_u = sample_batched[0].to(self.device)
                    pos_v = sample_batched[1].to(self.device)
                    neg_v = sample_batched[2].to(self.device)

                    optimizer.zero_grad()
                    loss = self.skip_gram_model.forward(pos_u, pos_v, neg_v)
                    loss.backward()
                    optimizer.step()
                    scheduler.step()

                    running_loss = running_loss * 0.9 + loss.item() * 0.1
            print(" Loss: " + str(running_loss))
        return self.skip_gram_model.embeddings()


if __name__ == '__main__':
    torch.manual_seed(0)
    corpus = list(np.random.RandomState(1).randint(0, 30, 40))
    w2v = Word2VecTrainer(corpus, emb_size=30)
    emb = w2v.train()
    print(emb.shape)
