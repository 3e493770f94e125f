import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class GCN(nn.Module):
    def __init__(self, n_features, n_classes, n_filters=16, do_cache_adj_prep=True, add_self_loops=True):
        super().__init__()
        self.do_cache_adj_prep = do_cache_adj_prep
        self.add_self_loops = add_self_loops
        self.adj_preped = None
        self.gcn_0 = nn.Linear(n_features, n_filters)
        self.gcn_1 = nn.Linear(n_filters, n_classes)

    def forward(self, data, adj):
        x, edge_idx, edge_weight = data, adj[0], adj[1]
        adj_norm = self._cache_if_option_is_set(self._convert_and_normalize, x, edge_idx, edge_weight)
        x = F.relu(adj_norm @ self.gcn_0(x))
        x = F.dropout(x, 0.5, self.training)
        return F.log_softmax(adj_norm @ self.gcn_1(x), dim=1)

    def _cache_if_option_is_set(self, callable, *inputs):
        if self.training and self.adj_preped is not None:
            return self.adj_preped
        else:
            adj_preped = callable(*inputs)

        if self.training and self.do_cache_adj_prep:
            self.adj_preped = adj_preped

        return adj_preped

    def _convert_and_normalize(self, x, edge_idx, edge_weight):
        num_nodes = x.shape[0]
        row, col = edge_idx
        if self.add_self_loops:
            loop = torch.arange(num_nodes)
            row, col = torch.cat([row, loop]), torch.cat([col, loop])
            edge_weight = torch.cat([edge_weight, torch.ones(num_nodes)])
        deg = torch.zeros(num_nodes).scatter_add(0, col, edge_weight)
        deg_inv_sqrt = deg.pow(-0.5)
        edge_weight = deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]
        return torch.zeros(num_nodes, num_nodes).index_put((row, col), edge_weight, accumulate=True)


def grad_with_checkpoint(outputs, inputs):
    inputs = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    for input in inputs:
        if not input.is_leaf:
            input.retain_grad()
    torch.autograd.backward(outputs)
    grad_outputs = []
    for input in inputs:
        grad_outputs.append(input.grad.clone())
        input.grad.zero_()
    return grad_outputs


n, d, c = 12, 8, 3
attr = torch.randn(n, d)
labels = torch.randint(0, c, (n,))
src = torch.randint(0, n, (30,))
dst = torch.randint(0, n, (30,))
edge_index = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])

attacked_model = GCN(d, c)
attacked_model.train()
for p in attacked_model.parameters():
    p.requires_grad_(False)

perturbed_edge_weight = torch.full((edge_index.size(1),), 1e-3, requires_grad=True)
lr_factor = 0.1
for epoch in range(3):
    edge_weight = torch.ones(edge_index.size(1)) - perturbed_edge_weight
    logits = attacked_model(attr, (edge_index, edge_weight))
    loss = F.nll_loss(logits, labels)
    gradient = grad_with_checkpoint(loss, perturbed_edge_weight)[0]
    with torch.no_grad():
        perturbed_edge_weight += lr_factor * gradient
        perturbed_edge_weight.clamp_(0, 1)
    print(epoch, loss.item())
