import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Module

torch.manual_seed(0)


class ItemConv(Module):
    def __init__(self, layers, emb_size=16):
        super(ItemConv, self).__init__()
        self.emb_size = emb_size
        self.layers = layers
        self.w_item = {}
        for i in range(self.layers):
            self.w_item['weight_item%d' % (i)] = nn.Linear(self.emb_size, self.emb_size, bias=False)

    def forward(self, adjacency, embedding):
        item_embeddings = embedding
        item_embedding_layer0 = item_embeddings
        final = [item_embedding_layer0]
        for i in range(self.layers):
            item_embeddings = self.w_item['weight_item%d' % (i)](item_embeddings)
            item_embeddings = torch.mm(adjacency, item_embeddings)
            final.append(F.normalize(item_embeddings, dim=-1, p=2))
        item_embeddings = torch.sum(torch.stack(final), 0) / (self.layers + 1)
        return item_embeddings


class COTREC(Module):
    def __init__(self, adjacency, n_node, lr, layers, emb_size=16):
        super(COTREC, self).__init__()
        self.emb_size = emb_size
        self.n_node = n_node
        self.adjacency = adjacency
        self.embedding = nn.Embedding(self.n_node, self.emb_size)
        self.ItemGraph = ItemConv(layers, emb_size)
        self.w_s = nn.Linear(self.emb_size, self.emb_size)
        self.optimizer = torch.optim.Adam(self.parameters(), lr=lr)

    def forward(self, session_item, session_len):
        item_embeddings_i = self.ItemGraph(self.adjacency, self.embedding.weight)
        seq_h = item_embeddings_i[session_item]
        sess_emb_i = self.w_s(seq_h.sum(1) / session_len)
        scores_item = torch.mm(sess_emb_i, item_embeddings_i.t())
        return scores_item


n_node = 20
adjacency = torch.rand(n_node, n_node)
adjacency = adjacency / adjacency.sum(1, keepdim=True)
model = COTREC(adjacency, n_node, lr=1e-3, layers=2)
loss_function = nn.CrossEntropyLoss()
for epoch in range(4):
    session_item = torch.randint(0, n_node, (8, 4))
    session_len = torch.full((8, 1), 4.0)
    tar = torch.randint(0, n_node, (8,))
    model.zero_grad()
    scores = model(session_item, session_len)
    loss = loss_function(scores, tar)
    loss.backward()
    model.optimizer.step()
    print(epoch, loss.item())
