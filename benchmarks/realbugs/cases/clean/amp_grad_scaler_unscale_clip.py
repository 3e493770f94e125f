import torch
import torch.nn as nn

torch.manual_seed(0)


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*tuple(layers))


batch_size = 16
in_size = 32
out_size = 8
num_layers = 3
num_batches = 4
epochs = 2
max_norm = 1.0
device = 'cpu'

data = [torch.randn(batch_size, in_size, device=device) for _ in range(num_batches)]
targets = [torch.randn(batch_size, out_size, device=device) for _ in range(num_batches)]
loss_fn = torch.nn.MSELoss()

model = make_model(in_size, out_size, num_layers)
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
scaler = torch.amp.GradScaler(device)

for epoch in range(epochs):
    for input, target in zip(data, targets):
        optimizer.zero_grad()
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            output = model(input)
            loss = loss_fn(output.float(), target)

        scaler.scale(loss).backward()

        scaler.unscale_(optimizer)

        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)

        scaler.step(optimizer)

        scaler.update()
    print(epoch, loss.item(), scaler.get_scale())
