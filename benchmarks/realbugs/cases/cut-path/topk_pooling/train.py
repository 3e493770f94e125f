from types import SimpleNamespace

import torch
import torch.nn.functional as F

from model import EdgePooling, GraphClassifier, NodePooling

torch.manual_seed(0)
device = torch.device("cpu")


class Graph(SimpleNamespace):
    def to(self, device):
        return self


class SubgraphExplainer:
    def __init__(self, model, in_dim, edge_dim):
        self.model = model
        self.node_pool = NodePooling(in_dim)
        self.edge_pool = EdgePooling(edge_dim)

    def train(self, subgraph, label, epoch=4, lr=0.01):
        optimizer = torch.optim.Adam([
            {'params': self.node_pool.parameters(), 'lr': lr},
            {'params': self.edge_pool.parameters(), 'lr': lr}
        ])
        for i in range(1, epoch + 1):
            optimizer.zero_grad()
            x, edge_index, edge_attr, batch, perm, self.node_score = self.node_pool(subgraph.x,
                                                                                    subgraph.edge_index,
                                                                                    subgraph.edge_attr
                                                                                    )
            x, edge_index, edge_attr, indices, self.edge_score = self.edge_pool(x, edge_index, edge_attr)

            graph = Graph(x=x, edge_index=edge_index, edge_attr=edge_attr)
            graph.to(device)
            logits = self.model(graph)
            loss = F.cross_entropy(logits.unsqueeze(0), label)
            loss.backward()
            optimizer.step()
            print(i, loss.item())


model = GraphClassifier(8, 4, 3)
subgraph = Graph(x=torch.randn(12, 8),
                 edge_index=torch.randint(0, 12, (2, 30)),
                 edge_attr=torch.randn(30, 4))
label = torch.tensor([1])
explainer = SubgraphExplainer(model, 8, 4)
explainer.train(subgraph, label)
