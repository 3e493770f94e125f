import torch
from torch import nn
import torch.nn.functional as F


def add_self_loops(edge_index, num_nodes):
    loop_index = torch.arange(0, num_nodes, dtype=torch.long)
    loop_index = loop_index.unsqueeze(0).repeat(2, 1)
    return torch.cat([edge_index, loop_index], dim=1)


def degree(index, num_nodes, dtype):
    out = torch.zeros((num_nodes, ), dtype=dtype)
    one = torch.ones((index.size(0), ), dtype=out.dtype)
    return out.scatter_add_(0, index, one)


class MessagePassing(nn.Module):
    def __init__(self, aggr="add"):
        super().__init__()
        self.aggr = aggr

    def propagate(self, edge_index, x, norm):
        row, col = edge_index
        x_j = x[row]
        msg = self.message(x_j, norm)
        out = torch.zeros(x.size(0), msg.size(1), dtype=msg.dtype)
        out = out.index_add_(0, col, msg)
        return self.update(out)

    def message(self, x_j, norm):
        return x_j

    def update(self, aggr_out):
        return aggr_out


class GCNConv(MessagePassing):
    def __init__(self, in_channels, out_channels):
        super().__init__(aggr='add')
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.empty(out_channels))

        self.reset_parameters()

    def reset_parameters(self):
        self.lin.reset_parameters()
        self.bias.data.zero_()

    def forward(self, x, edge_index):
        edge_index = add_self_loops(edge_index, num_nodes=x.size(0))

        x = self.lin(x)

        row, col = edge_index
        deg = degree(col, x.size(0), dtype=x.dtype)
        deg_inv_sqrt = deg.pow(-0.5)
        deg_inv_sqrt[deg_inv_sqrt == float('inf')] = 0
        norm = deg_inv_sqrt[row] * deg_inv_sqrt[col]

        out = self.propagate(edge_index, x=x, norm=norm)

        out = out + self.bias

        return out

    def message(self, x_j, norm):
        return norm.view(-1, 1) * x_j


class GCN(nn.Module):
    def __init__(self, num_features, hidden, num_classes):
        super().__init__()
        self.conv1 = GCNConv(num_features, hidden)
        self.conv2 = GCNConv(hidden, num_classes)

    def forward(self, x, edge_index):
        x = self.conv1(x, edge_index)
        x = F.relu(x)
        x = F.dropout(x, training=self.training)
        x = self.conv2(x, edge_index)
        return F.log_softmax(x, dim=1)


torch.manual_seed(0)
num_nodes, num_features, num_classes = 12, 6, 3
x = torch.randn(num_nodes, num_features)
src = torch.randint(0, num_nodes, (30,))
dst = torch.randint(0, num_nodes, (30,))
edge_index = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
y = torch.randint(0, num_classes, (num_nodes,))
train_mask = torch.zeros(num_nodes, dtype=torch.bool)
train_mask[:8] = True

model = GCN(num_features, 16, num_classes)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

model.train()
for epoch in range(10):
    optimizer.zero_grad()
    out = model(x, edge_index)
    loss = F.nll_loss(out[train_mask], y[train_mask])
    loss.backward()
    optimizer.step()

model.eval()
pred = model(x, edge_index).argmax(dim=1)
correct = (pred[~train_mask] == y[~train_mask]).sum()
acc = int(correct) / int((~train_mask).sum())
print(f'Accuracy: {acc:.4f}')
