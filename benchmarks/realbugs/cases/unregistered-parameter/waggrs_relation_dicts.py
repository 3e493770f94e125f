import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
numfeatures, numrel = 6, 2


class RelationNet(nn.Module):
    def __init__(self):
        super(RelationNet, self).__init__()
        self.waggrs = {}
        self.list_relations = {}
        for rel in range(10):
            self.waggrs[rel] = {'w': nn.Parameter(1. + torch.randn(1, 2)), 'b': nn.Parameter(torch.zeros(1, 4))}
            self.list_relations[rel] = nn.Linear(numfeatures, numrel)
        self.out = nn.Linear(4, 1)

    def forward(self, x, rels):
        agg = 0
        for rel in rels:
            h = self.list_relations[rel](x)
            agg = agg + torch.cat([h * self.waggrs[rel]['w'], h], 1) + self.waggrs[rel]['b']
        return self.out(torch.tanh(agg))


model = RelationNet()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(16, numfeatures)
y = torch.randn(16, 1)
for it in range(5):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x, [0, 3, 7]), y)
    loss.backward()
    optimizer.step()
print(loss.item())
