import torch
import torch.nn as nn

torch.manual_seed(0)


class SequenceClassifier(nn.Module):
    def __init__(self, vocab_size=30, hidden=16, num_labels=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden)
        self.classifier = nn.Linear(hidden, num_labels)
        self.loss_fct = nn.CrossEntropyLoss()

    def forward(self, input_ids, labels):
        hidden_states = self.embeddings(input_ids)
        pooled = hidden_states.mean(dim=1)
        logits = self.classifier(pooled)
        loss = self.loss_fct(logits, labels)
        return loss, logits, hidden_states, pooled


model = SequenceClassifier()
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1.0, end_factor=0.1, total_iters=5)
train_batch = [{"input_ids": torch.randint(0, 30, (4, 6)), "labels": torch.randint(0, 2, (4,))} for _ in range(5)]

for x in train_batch:
    loss, logits, _, _ = model(**x)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    scheduler.step()
