import torch
import torch.nn as nn


class BertOutput(nn.Module):
    def __init__(self, intermediate_size, hidden_size):
        super().__init__()
        self.dense = nn.Linear(intermediate_size, hidden_size)

    def forward(self, hidden_states, input_tensor):
        return self.dense(hidden_states) + input_tensor


class BertLayer(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.intermediate = nn.Linear(hidden_size, intermediate_size)
        self.output = BertOutput(intermediate_size, hidden_size)

    def forward(self, x):
        return self.output(torch.relu(self.intermediate(x)), x)


class BertEncoder(nn.Module):
    def __init__(self, num_layers, hidden_size, intermediate_size):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(hidden_size, intermediate_size) for _ in range(num_layers)])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class BertModel(nn.Module):
    def __init__(self, vocab_size, hidden_size, intermediate_size, num_layers):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden_size)
        self.encoder = BertEncoder(num_layers, hidden_size, intermediate_size)

    def forward(self, input_ids):
        return self.encoder(self.embeddings(input_ids))


class BertForMaskedLM(nn.Module):
    def __init__(self, vocab_size=50, hidden_size=16, intermediate_size=32, num_layers=3):
        super().__init__()
        self.bert = BertModel(vocab_size, hidden_size, intermediate_size, num_layers)
        self.cls = nn.Linear(hidden_size, vocab_size)

    def forward(self, input_ids):
        return self.cls(self.bert(input_ids))


torch.manual_seed(0)
model = BertForMaskedLM()
model.eval()
input_ids = torch.randint(0, 50, (1, 6))
mask_pos = 3
logits = model(input_ids)[0, mask_pos]
ori_pred_id = int(logits.argmax())
tgt_id = (ori_pred_id + 1) % 50
ori_pred_emb = model.bert.embeddings.weight[ori_pred_id]
tgt_emb = model.bert.embeddings.weight[tgt_id]

kn_bag = [(1, 4), (2, 7)]
lambda_list_1 = [2.0, 2.0]
lambda_list_2 = [4.0, 4.0]
for i, (layer, pos) in enumerate(kn_bag):
    model.bert.encoder.layer[layer].output.dense.weight[:, pos] -= ori_pred_emb * lambda_list_1[i]
    model.bert.encoder.layer[layer].output.dense.weight[:, pos] += tgt_emb * lambda_list_2[i]

new_logits = model(input_ids)[0, mask_pos]
print(ori_pred_id, tgt_id, int(new_logits.argmax()))
