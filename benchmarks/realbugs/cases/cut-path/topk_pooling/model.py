import torch
import torch.nn as nn


class NodePooling(nn.Module):
    def __init__(self, in_dim, ratio=0.5):
        super().__init__()
        self.score_layer = nn.Linear(in_dim, 1)
        self.ratio = ratio

    def forward(self, x, edge_index, edge_attr):
        score = self.score_layer(x).squeeze(-1)
        k = max(1, int(self.ratio * x.size(0)))
        perm = torch.topk(score, k).indices
        x = x[perm]
        batch = torch.zeros(k, dtype=torch.long)
        return x, edge_index, edge_attr, batch, perm, score


class EdgePooling(nn.Module):
    def __init__(self, edge_dim, ratio=0.5):
        super().__init__()
        self.score_layer = nn.Linear(edge_dim, 1)
        self.ratio = ratio

    def forward(self, x, edge_index, edge_attr):
        score = self.score_layer(edge_attr).squeeze(-1)
        k = max(1, int(self.ratio * edge_attr.size(0)))
        indices = torch.topk(score, k).indices
        edge_attr = edge_attr[indices]
        edge_index = edge_index[:, indices]
        return x, edge_index, edge_attr, indices, score


class GraphClassifier(nn.Module):
    def __init__(self, in_dim, edge_dim, num_classes):
        super().__init__()
        self.node_fc = nn.Linear(in_dim, 16)
        self.edge_fc = nn.Linear(edge_dim, 16)
        self.readout = nn.Linear(16, num_classes)

    def forward(self, graph):
        h = torch.relu(self.node_fc(graph.x)).mean(0)
        h = h + torch.relu(self.edge_fc(graph.edge_attr)).mean(0)
        return self.readout(h)
