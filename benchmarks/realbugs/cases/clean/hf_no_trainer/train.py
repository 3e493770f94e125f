import math

import torch
from torch.optim import AdamW
from torch.utils.data import DataLoader, Dataset

from modeling import EncoderForSequenceClassification, get_linear_schedule_with_warmup


class Args:
    seed = 42
    per_device_train_batch_size = 4
    per_device_eval_batch_size = 8
    learning_rate = 5e-4
    weight_decay = 0.01
    num_train_epochs = 2
    gradient_accumulation_steps = 2
    num_warmup_steps = 2
    max_grad_norm = 1.0
    max_length = 12
    vocab_size = 30


class SyntheticGlue(Dataset):
    def __init__(self, n, args, seed):
        g = torch.Generator().manual_seed(seed)
        lengths = torch.randint(4, args.max_length + 1, (n,), generator=g)
        self.examples = []
        for length in lengths.tolist():
            ids = torch.randint(1, args.vocab_size, (length,), generator=g)
            label = int(ids.float().mean() > args.vocab_size / 2)
            self.examples.append((ids, label))

    def __len__(self):
        return len(self.examples)

    def __getitem__(self, i):
        return self.examples[i]


def data_collator(features):
    max_len = max(len(ids) for ids, _ in features)
    input_ids = torch.zeros(len(features), max_len, dtype=torch.long)
    attention_mask = torch.zeros(len(features), max_len, dtype=torch.long)
    for i, (ids, _) in enumerate(features):
        input_ids[i, :len(ids)] = ids
        attention_mask[i, :len(ids)] = 1
    labels = torch.tensor([label for _, label in features])
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def main():
    args = Args()
    torch.manual_seed(args.seed)
    device = torch.device("cpu")

    train_dataset = SyntheticGlue(24, args, 0)
    eval_dataset = SyntheticGlue(16, args, 1)
    train_dataloader = DataLoader(train_dataset, shuffle=True, collate_fn=data_collator,
                                  batch_size=args.per_device_train_batch_size)
    eval_dataloader = DataLoader(eval_dataset, collate_fn=data_collator, batch_size=args.per_device_eval_batch_size)

    model = EncoderForSequenceClassification(args.vocab_size, num_labels=2).to(device)

    no_decay = ["bias", "norm1.weight", "norm2.weight"]
    optimizer_grouped_parameters = [
        {
            "params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
            "weight_decay": args.weight_decay,
        },
        {
            "params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optimizer = AdamW(optimizer_grouped_parameters, lr=args.learning_rate)

    num_update_steps_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)
    max_train_steps = args.num_train_epochs * num_update_steps_per_epoch

    lr_scheduler = get_linear_schedule_with_warmup(
        optimizer=optimizer,
        num_warmup_steps=args.num_warmup_steps,
        num_training_steps=max_train_steps,
    )

    completed_steps = 0
    for epoch in range(args.num_train_epochs):
        model.train()
        total_loss = 0
        for step, batch in enumerate(train_dataloader):
            batch = {k: v.to(device) for k, v in batch.items()}
            outputs = model(**batch)
            loss = outputs["loss"]
            total_loss += loss.detach().float()
            loss = loss / args.gradient_accumulation_steps
            loss.backward()
            if step % args.gradient_accumulation_steps == 0 or step == len(train_dataloader) - 1:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
                completed_steps += 1

        model.eval()
        correct = 0
        for step, batch in enumerate(eval_dataloader):
            with torch.no_grad():
                outputs = model(**batch)
            predictions = outputs["logits"].argmax(dim=-1)
            correct += (predictions == batch["labels"]).sum().item()
        print(f"epoch {epoch}: accuracy {correct / len(eval_dataset):.3f} "
              f"train_loss {total_loss.item() / len(train_dataloader):.4f} steps {completed_steps}")


if __name__ == "__main__":
    main()
