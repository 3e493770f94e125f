import time

import torch
import torch.utils.data
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import utils
from resnet import resnet_tiny


class Args:
    batch_size = 8
    epochs = 2
    lr = 0.1
    momentum = 0.9
    weight_decay = 1e-4
    norm_weight_decay = 0.0
    label_smoothing = 0.1
    clip_grad_norm = 1.0
    model_ema = True
    model_ema_steps = 2
    model_ema_decay = 0.99
    lr_step_size = 1
    lr_gamma = 0.1
    print_freq = 2


def train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args, model_ema=None, scaler=None):
    model.train()
    header = f"Epoch: [{epoch}]"
    for i, (image, target) in enumerate(data_loader):
        start_time = time.time()
        image, target = image.to(device), target.to(device)
        output = model(image)
        loss = criterion(output, target)

        optimizer.zero_grad()
        loss.backward()
        if args.clip_grad_norm is not None:
            nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm)
        optimizer.step()

        if model_ema and i % args.model_ema_steps == 0:
            model_ema.update_parameters(model)

        acc1, acc5 = utils.accuracy(output, target, topk=(1, 5))
        batch_size = image.shape[0]
        if i % args.print_freq == 0:
            print(header, i, "loss", loss.item(), "lr", optimizer.param_groups[0]["lr"],
                  "acc1", acc1.item(), "img/s", batch_size / (time.time() - start_time))


def evaluate(model, criterion, data_loader, device, log_suffix=""):
    model.eval()
    num_processed_samples = 0
    total_acc1 = 0.0
    with torch.inference_mode():
        for image, target in data_loader:
            image = image.to(device, non_blocking=True)
            target = target.to(device, non_blocking=True)
            output = model(image)
            loss = criterion(output, target)

            acc1, acc5 = utils.accuracy(output, target, topk=(1, 5))
            batch_size = image.shape[0]
            total_acc1 += acc1.item() * batch_size
            num_processed_samples += batch_size

    print(f"{log_suffix} Acc@1 {total_acc1 / num_processed_samples:.3f}")
    return total_acc1 / num_processed_samples


def main(args):
    device = torch.device("cpu")
    torch.manual_seed(0)

    dataset = TensorDataset(torch.randn(16, 3, 8, 8), torch.randint(0, 10, (16,)))
    dataset_test = TensorDataset(torch.randn(8, 3, 8, 8), torch.randint(0, 10, (8,)))
    data_loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)
    data_loader_test = DataLoader(dataset_test, batch_size=args.batch_size)

    model = resnet_tiny(num_classes=10)
    model.to(device)

    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)

    parameters = utils.set_weight_decay(model, args.weight_decay, norm_weight_decay=args.norm_weight_decay)
    optimizer = torch.optim.SGD(parameters, lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)

    main_lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=args.lr_step_size, gamma=args.lr_gamma)

    model_ema = None
    if args.model_ema:
        adjust = args.batch_size * args.model_ema_steps / args.epochs
        alpha = 1.0 - args.model_ema_decay
        alpha = min(1.0, alpha * adjust)
        model_ema = utils.ExponentialMovingAverage(model, device=device, decay=1.0 - alpha)

    print("Start training")
    start_time = time.time()
    for epoch in range(args.epochs):
        train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args, model_ema)
        main_lr_scheduler.step()
        evaluate(model, criterion, data_loader_test, device=device)
        if model_ema:
            evaluate(model_ema, criterion, data_loader_test, device=device, log_suffix="EMA")
    print(f"Training time {time.time() - start_time:.2f}s")


if __name__ == "__main__":
    main(Args())
