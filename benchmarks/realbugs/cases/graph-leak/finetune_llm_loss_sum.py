import contextlib
import time
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Accelerator(object):
    def __init__(self, gradient_accumulation_steps=1):
        self.device = torch.device("cpu")
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.is_main_process = True

    @contextlib.contextmanager
    def accumulate(self, model):
        yield

    def backward(self, loss):
        (loss / self.gradient_accumulation_steps).backward()

    def prepare(self, *objs):
        return objs


class TinyCausalLM(nn.Module):
    def __init__(self, vocab_size=32, hidden=16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.block = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU())
        self.lm_head = nn.Linear(hidden, vocab_size)

    def forward(self, input_ids, attention_mask=None, labels=None):
        logits = self.lm_head(self.block(self.embed(input_ids)))
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))
        return SimpleNamespace(loss=loss, logits=logits)


def training_function(kwargs):
    num_epochs = kwargs["num_epochs"]
    batch_size = kwargs["batch_size"]
    accelerator = Accelerator()
    model = TinyCausalLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=kwargs["lr"])
    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    model, optimizer, lr_scheduler = accelerator.prepare(model, optimizer, lr_scheduler)
    ids = torch.randint(0, 32, (batch_size * 4, 12))
    train_ds = [{"input_ids": ids[i:i + batch_size], "attention_mask": torch.ones(batch_size, 12),
                 "labels": ids[i:i + batch_size]} for i in range(0, len(ids), batch_size)]

    for epoch in range(num_epochs):
        fwd_time_sum, bwd_time_sum, optim_step_time_sum = 0, 0, 0
        s_epoch = time.time()
        model.train()
        loss_sum = torch.tensor(0.0).to(accelerator.device)
        train_dataloader = iter(train_ds)
        for step, batch in enumerate(train_dataloader):
            with accelerator.accumulate(model):
                s_fwd = time.time()
                outputs = model(**batch)
                loss = outputs.loss
                loss_sum += loss
                e_fwd = time.time()
                fwd_time_sum += e_fwd - s_fwd
                s_bwd = time.time()
                accelerator.backward(loss)
                bwd_time_sum += time.time() - s_bwd
                s_opt_step = time.time()
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
                optim_step_time_sum += time.time() - s_opt_step
        e_epoch = time.time()
        loss_mean = loss_sum / (step + 1)
        if accelerator.is_main_process:
            print(f"epoch {epoch} loss {loss_mean.item():.4f} time {e_epoch - s_epoch:.3f}s")
    return loss_sum


loss_sum = training_function({"num_epochs": 2, "batch_size": 4, "lr": 1e-3})
