import torch
import torch.nn as nn
from torch import optim

torch.manual_seed(0)


class CRF(nn.Module):
    def __init__(self, num_tags, batch_first=True):
        super().__init__()
        self.num_tags = num_tags
        self.batch_first = batch_first
        self.start_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.end_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags).uniform_(-0.1, 0.1))

    def forward(self, emissions, tags, mask=None, reduction='mean'):
        batch, seq_len, _ = emissions.shape
        ar = torch.arange(batch)
        score = self.start_transitions[tags[:, 0]] + emissions[ar, 0, tags[:, 0]]
        for i in range(1, seq_len):
            score = score + self.transitions[tags[:, i - 1], tags[:, i]] + emissions[ar, i, tags[:, i]]
        score = score + self.end_transitions[tags[:, -1]]
        alpha = self.start_transitions + emissions[:, 0]
        for i in range(1, seq_len):
            alpha = torch.logsumexp(alpha.unsqueeze(2) + self.transitions + emissions[:, i].unsqueeze(1), dim=1)
        norm = torch.logsumexp(alpha + self.end_transitions, dim=1)
        llh = score - norm
        return llh.mean() if reduction == 'mean' else llh.sum()


class Output:
    def __init__(self, loss, logits):
        self.loss = loss
        self.logits = logits


class HMNeTNERModel(nn.Module):
    def __init__(self, label_list, vocab_size=50, hidden=32):
        super().__init__()
        self.bert = nn.ModuleDict({'embeddings': nn.Embedding(vocab_size, hidden),
                                   'encoder': nn.Linear(hidden, hidden)})
        self.image_model = nn.Linear(12, 16)
        self.encoder_conv = nn.Sequential(nn.Linear(16, hidden), nn.Tanh())
        self.gates = nn.ModuleList([nn.Linear(hidden, 2) for _ in range(2)])
        self.num_labels = len(label_list) + 1
        self.crf = CRF(self.num_labels, batch_first=True)
        self.fc = nn.Linear(hidden, self.num_labels)
        self.dropout = nn.Dropout(0.1)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None, images=None, aux_imgs=None):
        prompt = self.encoder_conv(self.image_model(images))
        gate = torch.softmax(self.gates[0](prompt), dim=-1)
        sequence_output = torch.tanh(self.bert['encoder'](self.bert['embeddings'](input_ids)))
        sequence_output = sequence_output + gate[:, :1].unsqueeze(1) * prompt.unsqueeze(1)
        emissions = self.fc(self.dropout(sequence_output))
        logits = emissions.argmax(-1)
        loss = -1 * self.crf(emissions, labels, mask=attention_mask.byte(), reduction='mean')
        return Output(loss=loss, logits=logits)


class Args:
    lr = 3e-3
    num_epochs = 2
    warmup_ratio = 0.01
    device = 'cpu'
    use_prompt = True


class NERTrainer(object):
    def __init__(self, train_data=None, model=None, args=None):
        self.train_data = train_data
        self.model = model
        self.args = args
        self.train_num_steps = len(self.train_data) * args.num_epochs
        self.step = 0

    def train(self):
        self.step = 0
        self.model.train()
        self.multiModal_before_train()
        for epoch in range(1, self.args.num_epochs + 1):
            avg_loss = 0
            for batch in self.train_data:
                self.step += 1
                batch = (tup.to(self.args.device) if isinstance(tup, torch.Tensor) else tup for tup in batch)
                attention_mask, labels, logits, loss = self._step(batch, mode="train")
                avg_loss += loss.detach().cpu().item()

                loss.backward()
                self.optimizer.step()
                self.scheduler.step()
                self.optimizer.zero_grad()
            print(epoch, avg_loss / len(self.train_data))

    def _step(self, batch, mode="train"):
        input_ids, token_type_ids, attention_mask, labels, images, aux_imgs = batch
        output = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                            labels=labels, images=images, aux_imgs=aux_imgs)
        logits, loss = output.logits, output.loss
        return attention_mask, labels, logits, loss

    def multiModal_before_train(self):
        parameters = []
        params = {'lr': self.args.lr, 'weight_decay': 1e-2}
        params['params'] = []
        for name, param in self.model.named_parameters():
            if 'bert' in name:
                params['params'].append(param)
        parameters.append(params)

        params = {'lr': self.args.lr, 'weight_decay': 1e-2}
        params['params'] = []
        for name, param in self.model.named_parameters():
            if 'encoder_conv' in name or 'gates' in name:
                params['params'].append(param)
        parameters.append(params)

        params = {'lr': 5e-2, 'weight_decay': 1e-2}
        params['params'] = []
        for name, param in self.model.named_parameters():
            if 'crf' in name or name.startswith('fc'):
                params['params'].append(param)

        self.optimizer = optim.AdamW(parameters)

        for name, par in self.model.named_parameters():
            if 'image_model' in name:
                par.requires_grad = False

        warmup = max(1, int(self.args.warmup_ratio * self.train_num_steps))
        self.scheduler = optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, 1 - s / self.train_num_steps))
        self.model.to(self.args.device)


label_list = ['B-PER', 'I-PER', 'B-LOC', 'I-LOC', 'O']
train_data = []
for _ in range(3):
    input_ids = torch.randint(0, 50, (4, 6))
    train_data.append((input_ids, torch.zeros_like(input_ids), torch.ones_like(input_ids),
                       torch.randint(0, len(label_list) + 1, (4, 6)), torch.randn(4, 12), None))
model = HMNeTNERModel(label_list)
trainer = NERTrainer(train_data=train_data, model=model, args=Args())
trainer.train()
