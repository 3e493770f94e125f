import torch
import torch.nn.functional as F
from transformers import BertConfig, BertModel

torch.manual_seed(0)


def mean_pooling(model_output, attention_mask):
    token_embeddings = model_output[0]  # first element of model_output contains all token embeddings
    input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
    return torch.sum(token_embeddings * input_mask_expanded, 1) / torch.clamp(input_mask_expanded.sum(1), min=1e-9)


config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=32)
model = BertModel(config)
optimizer = torch.optim.AdamW(params=model.parameters(), lr=2e-5)
cross_entropy_loss = torch.nn.CrossEntropyLoss()
scale = 20.0

model.train()
for global_step in range(6):
    # a batch of (anchor, positive) pairs; in-batch negatives
    text1 = {"input_ids": torch.randint(1, 100, (8, 12)), "attention_mask": torch.ones(8, 12, dtype=torch.long)}
    text2 = {"input_ids": torch.randint(1, 100, (8, 12)), "attention_mask": torch.ones(8, 12, dtype=torch.long)}
    text2["attention_mask"][:, 9:] = 0

    embeddings_a = mean_pooling(model(**text1), text1["attention_mask"])
    embeddings_b = mean_pooling(model(**text2), text2["attention_mask"])
    embeddings_a = F.normalize(embeddings_a, p=2, dim=1)
    embeddings_b = F.normalize(embeddings_b, p=2, dim=1)

    scores = torch.mm(embeddings_a, embeddings_b.transpose(0, 1)) * scale
    labels = torch.tensor(range(len(scores)), dtype=torch.long, device=embeddings_a.device)
    loss = (cross_entropy_loss(scores, labels) + cross_entropy_loss(scores.transpose(0, 1), labels)) / 2

    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    print(global_step, loss.item())
