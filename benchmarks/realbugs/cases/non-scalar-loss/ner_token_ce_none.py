import torch
import torch.nn as nn


class BaseModel(nn.Module):
    def __init__(self, vocab_size=40, hidden=16):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden)
        self.encoder = nn.LSTM(hidden, hidden, batch_first=True, bidirectional=True)


class SpanModel(BaseModel):
    def __init__(self, num_tags=5, loss_type='ce'):
        super().__init__()
        self.start_fc = nn.Linear(32, num_tags)
        self.end_fc = nn.Linear(32, num_tags)
        reduction = 'none'
        if loss_type == 'ce':
            self.criterion = nn.CrossEntropyLoss(reduction=reduction)
        self.num_tags = num_tags

    def forward(self, token_ids, start_ids=None, end_ids=None):
        seq_out, _ = self.encoder(self.embeddings(token_ids))
        start_logits = self.start_fc(seq_out)
        end_logits = self.end_fc(seq_out)
        out = (start_logits, end_logits)
        if start_ids is not None and end_ids is not None:
            start_logits = start_logits.view(-1, self.num_tags)
            end_logits = end_logits.view(-1, self.num_tags)
            start_loss = self.criterion(start_logits, start_ids.view(-1))
            end_loss = self.criterion(end_logits, end_ids.view(-1))
            loss = start_loss + end_loss
            out = (loss,) + out
        return out


def train(model, train_loader, epochs=2):
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    model.train()
    for epoch in range(epochs):
        for batch_data in train_loader:
            model.zero_grad()
            loss = model(**batch_data)[0]
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()


torch.manual_seed(0)
model = SpanModel()
train_loader = [{"token_ids": torch.randint(0, 40, (2, 10)),
                 "start_ids": torch.randint(0, 5, (2, 10)),
                 "end_ids": torch.randint(0, 5, (2, 10))} for _ in range(2)]
train(model, train_loader)
