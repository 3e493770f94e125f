import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TinyBert(nn.Module):
    def __init__(self, vocab_size=50, hidden=32):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden)
        self.encoder = nn.TransformerEncoderLayer(hidden, 4, dim_feedforward=64, batch_first=True)

    def forward(self, input_ids, attention_mask):
        return (self.encoder(self.embeddings(input_ids)),)


class ModelCLR(nn.Module):
    def __init__(self, out_dim=16, hidden=32, num_ftrs=24):
        super(ModelCLR, self).__init__()
        self.bert_model = TinyBert(hidden=hidden)
        self.bert_l1 = nn.Linear(hidden, hidden)
        self.bert_l2 = nn.Linear(hidden, out_dim)

        self.res_features = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, num_ftrs), nn.ReLU())
        self.res_l1 = nn.Linear(num_ftrs, num_ftrs)
        self.res_l2 = nn.Linear(num_ftrs, out_dim)

    def mean_pooling(self, model_output, attention_mask):
        token_embeddings = model_output[0]
        input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
        sum_embeddings = torch.sum(token_embeddings * input_mask_expanded, 1)
        sum_mask = torch.clamp(input_mask_expanded.sum(1), min=1e-9)
        return sum_embeddings / sum_mask

    def image_encoder(self, xis):
        h = self.res_features(xis)
        h = h.squeeze()

        x = self.res_l1(h)
        x = F.relu(x)
        x = self.res_l2(x)

        return h, x

    def text_encoder(self, encoded_inputs):
        outputs = self.bert_model(**encoded_inputs)

        with torch.no_grad():
            sentence_embeddings = self.mean_pooling(outputs, encoded_inputs['attention_mask'])
            x = self.bert_l1(sentence_embeddings)
            x = F.relu(x)
            out_emb = self.bert_l2(x)

        return out_emb

    def forward(self, xis, encoded_inputs):
        h, zis = self.image_encoder(xis)
        zls = self.text_encoder(encoded_inputs)
        return zis, zls


class NTXentLoss(nn.Module):
    def __init__(self, temperature=0.1, alpha_weight=0.75):
        super().__init__()
        self.temperature = temperature
        self.alpha_weight = alpha_weight

    def forward(self, zis, zjs):
        zis = F.normalize(zis, dim=1)
        zjs = F.normalize(zjs, dim=1)
        logits = zis @ zjs.t() / self.temperature
        labels = torch.arange(zis.shape[0])
        loss_a = F.cross_entropy(logits, labels)
        loss_b = F.cross_entropy(logits.t(), labels)
        return self.alpha_weight * loss_a + (1 - self.alpha_weight) * loss_b


model = ModelCLR()
nt_xent_criterion = NTXentLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-4, weight_decay=1e-6)

for epoch_counter in range(3):
    for step in range(2):
        xis = torch.randn(8, 3, 8, 8)
        xls = {'input_ids': torch.randint(0, 50, (8, 10)), 'attention_mask': torch.ones(8, 10, dtype=torch.long)}
        optimizer.zero_grad()
        zis, zls = model(xis, xls)
        loss = nt_xent_criterion(zis, zls)
        loss.backward()
        optimizer.step()
    print(epoch_counter, loss.item())
