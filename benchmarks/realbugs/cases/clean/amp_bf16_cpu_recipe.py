import time

import torch

device = "cpu"
amp_dtype = torch.bfloat16
torch.manual_seed(0)

batch_size = 64
in_size = 64
out_size = 64
num_layers = 3
num_batches = 6
epochs = 2

data = [torch.randn(batch_size, in_size, device=device) for _ in range(num_batches)]
targets = [torch.randn(batch_size, out_size, device=device) for _ in range(num_batches)]

loss_fn = torch.nn.MSELoss().to(device)


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*tuple(layers)).to(device)


def timed(label, fn):
    start = time.perf_counter()
    fn()
    print("{} {:.3f} sec".format(label, time.perf_counter() - start))


def default_precision():
    net = make_model(in_size, out_size, num_layers)
    opt = torch.optim.SGD(net.parameters(), lr=0.001)
    for epoch in range(epochs):
        for input, target in zip(data, targets):
            output = net(input)
            loss = loss_fn(output, target)
            loss.backward()
            opt.step()
            opt.zero_grad()


def mixed_precision():
    use_amp = True
    net = make_model(in_size, out_size, num_layers)
    opt = torch.optim.SGD(net.parameters(), lr=0.001)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=epochs * num_batches)
    scaler = torch.amp.GradScaler(device, enabled=use_amp and amp_dtype == torch.float16)

    for epoch in range(epochs):
        for input, target in zip(data, targets):
            with torch.autocast(device_type=device, dtype=amp_dtype, enabled=use_amp):
                output = net(input)
                assert output.dtype is amp_dtype
                loss = loss_fn(output, target)
                assert loss.dtype is torch.float32
            scaler.scale(loss).backward()

            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=0.1)

            scaler.step(opt)
            scaler.update()
            scheduler.step()
            opt.zero_grad(set_to_none=True)
        print(epoch, loss.item(), scheduler.get_last_lr()[0])

    checkpoint = {"model": net.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict()}
    net.load_state_dict(checkpoint["model"])
    opt.load_state_dict(checkpoint["optimizer"])
    scaler.load_state_dict(checkpoint["scaler"])

    net.eval()
    with torch.inference_mode(), torch.autocast(device_type=device, dtype=amp_dtype):
        print(net(data[0]).float().mean().item())


timed("Default precision:", default_precision)
timed("Mixed precision:", mixed_precision)
