import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state

torch.manual_seed(0)
device = 'cpu'


class SimpleMLP(nn.Module):
    def __init__(self):
        super(SimpleMLP, self).__init__()
        self.fc1 = nn.Linear(784, 64)
        self.fc2 = nn.Linear(64, 32)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


num_models = 4
data = torch.randn(40, 1, 28, 28, device=device)
targets = torch.randint(10, (40,), device=device)
models = [SimpleMLP().to(device) for _ in range(num_models)]
minibatches = data[:num_models]
predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in zip(models, minibatches)]
minibatch = data[:8]
predictions2 = [model(minibatch) for model in models]

params, buffers = stack_module_state(models)
base_model = copy.deepcopy(models[0])
base_model = base_model.to('meta')


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


predictions1_vmap = torch.vmap(fmodel)(params, buffers, minibatches)
assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-3, rtol=1e-5)
predictions2_vmap = torch.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)

# train the whole ensemble at once through the stacked parameters
optimizer = torch.optim.SGD(list(params.values()), lr=0.05)
for step in range(10):
    batch = torch.randint(0, 40, (num_models, 8))
    logits = torch.vmap(fmodel)(params, buffers, data[batch])
    loss = F.cross_entropy(logits.reshape(-1, 10), targets[batch].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(loss.item())
