import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments, set_seed


class SyntheticYelp(torch.utils.data.Dataset):
    def __init__(self, n, seq_len, vocab_size, seed):
        g = torch.Generator().manual_seed(seed)
        self.input_ids = torch.randint(5, vocab_size, (n, seq_len), generator=g)
        self.attention_mask = torch.ones(n, seq_len, dtype=torch.long)
        lengths = torch.randint(seq_len // 2, seq_len + 1, (n,), generator=g)
        for i, length in enumerate(lengths.tolist()):
            self.input_ids[i, length:] = 0
            self.attention_mask[i, length:] = 0
        self.labels = (self.input_ids[:, 0] % 5).long()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.input_ids[i], "attention_mask": self.attention_mask[i], "labels": self.labels[i]}


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    predictions = np.argmax(logits, axis=-1)
    return {"accuracy": float((predictions == labels).mean())}


set_seed(42)
config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=32, num_labels=5)
model = BertForSequenceClassification(config)

small_train_dataset = SyntheticYelp(32, 16, config.vocab_size, seed=0)
small_eval_dataset = SyntheticYelp(16, 16, config.vocab_size, seed=1)

with tempfile.TemporaryDirectory() as output_dir:
    training_args = TrainingArguments(
        output_dir=output_dir,
        eval_strategy="epoch",
        num_train_epochs=2,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=8,
        learning_rate=5e-4,
        weight_decay=0.01,
        warmup_steps=2,
        gradient_accumulation_steps=2,
        max_grad_norm=1.0,
        logging_steps=2,
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        use_cpu=True,
        dataloader_num_workers=0,
        seed=42,
    )

    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=small_train_dataset,
        eval_dataset=small_eval_dataset,
        compute_metrics=compute_metrics,
    )
    trainer.train()
    print(trainer.evaluate())
