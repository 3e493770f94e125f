from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


@dataclass
class QuestionAnsweringModelOutput:
    loss: torch.Tensor
    start_logits: torch.Tensor
    end_logits: torch.Tensor


class BertForQuestionAnswering(nn.Module):
    def __init__(self, vocab=30, hidden=16):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, hidden)
        self.encoder = nn.Linear(hidden, hidden)
        self.qa_outputs = nn.Linear(hidden, 2)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, start_positions=None, end_positions=None):
        h = torch.tanh(self.encoder(self.embeddings(input_ids)))
        start_logits, end_logits = self.qa_outputs(h).unbind(-1)
        loss = (F.cross_entropy(start_logits, start_positions) + F.cross_entropy(end_logits, end_positions)) / 2
        return QuestionAnsweringModelOutput(loss=loss, start_logits=start_logits, end_logits=end_logits)


model = BertForQuestionAnswering()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
num_epoch = 1
logging_step = 5
train_loader = [
    (torch.randint(0, 30, (4, 12)), torch.zeros(4, 12, dtype=torch.long), torch.ones(4, 12, dtype=torch.long),
     torch.randint(0, 12, (4,)), torch.randint(0, 12, (4,)))
    for _ in range(8)
]

model.train()
for epoch in range(num_epoch):
    step = 1
    train_loss = train_acc = 0
    for data in train_loader:
        output = model(input_ids=data[0], token_type_ids=data[1], attention_mask=data[2],
                       start_positions=data[3], end_positions=data[4])
        start_index = torch.argmax(output.start_logits, dim=1)
        end_index = torch.argmax(output.end_logits, dim=1)
        train_acc += ((start_index == data[3]) & (end_index == data[4])).float().mean()
        train_loss += output.loss

        output.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1

        if step % logging_step == 0:
            print(f"Epoch {epoch + 1} | Step {step} | loss = {train_loss.item() / logging_step:.3f}, acc = {train_acc / logging_step:.3f}")
            train_loss = train_acc = 0
