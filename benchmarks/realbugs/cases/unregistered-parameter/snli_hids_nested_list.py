import torch
import torch.nn as nn

torch.manual_seed(0)


class SNLINet(nn.Module):
    def __init__(self, options):
        super(SNLINet, self).__init__()
        indim = options['n_in']
        self.hids = []
        for li in range(options['n_layers']):
            self.hids.append([
                nn.Linear(indim, options['n_hid']),
                eval('nn.{}'.format(options['act']))()
                ])
            indim = options['n_hid']

        self.classifier = nn.Linear(options['n_hid'], 3)

    def forward(self, x):
        h = x
        for linear, act in self.hids:
            h = act(linear(h))
        return self.classifier(h)


options = {'n_in': 12, 'n_hid': 16, 'n_layers': 2, 'act': 'Tanh'}
model = SNLINet(options)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()
premise_hypothesis = torch.randn(24, options['n_in'])
labels = torch.randint(0, 3, (24,))
for step in range(8):
    optimizer.zero_grad()
    loss = criterion(model(premise_hypothesis), labels)
    loss.backward()
    optimizer.step()
