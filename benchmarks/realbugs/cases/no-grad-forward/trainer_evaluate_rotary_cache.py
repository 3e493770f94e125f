import torch
import torch.nn as nn
import torch.nn.functional as F


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        self.dim = dim
        self.base = base
        self.max_seq_len_cached = 0
        self.cos_cached = None
        self.sin_cached = None

    def forward(self, seq_len):
        if seq_len > self.max_seq_len_cached:
            inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2).float() / self.dim))
            t = torch.arange(seq_len).float()
            freqs = torch.outer(t, inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            self.cos_cached = emb.cos()
            self.sin_cached = emb.sin()
            self.max_seq_len_cached = seq_len
        return self.cos_cached[:seq_len], self.sin_cached[:seq_len]


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.o_proj = nn.Linear(dim, dim)
        self.rotary_emb = RotaryEmbedding(dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        cos, sin = self.rotary_emb(x.size(1))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out)


class TinyLM(nn.Module):
    def __init__(self, vocab=32, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.attn = Attention(dim)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, input_ids):
        h = self.embed(input_ids)
        h = h + self.attn(h)
        return self.lm_head(h)


class Trainer:
    def __init__(self, model, train_batches, eval_batches):
        self.model = model
        self.train_batches = train_batches
        self.eval_batches = eval_batches
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def loss(self, batch):
        logits = self.model(batch[:, :-1])
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))

    @torch.inference_mode()
    def evaluate(self):
        self.model.eval()
        losses = [self.loss(batch).item() for batch in self.eval_batches]
        self.model.train()
        return sum(losses) / len(losses)

    def train(self, epochs=2):
        print("eval loss before training:", self.evaluate())
        for epoch in range(epochs):
            for batch in self.train_batches:
                loss = self.loss(batch)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            print(epoch, self.evaluate())


torch.manual_seed(0)
model = TinyLM()
trainer = Trainer(model, [torch.randint(0, 32, (4, 9)) for _ in range(2)], [torch.randint(0, 32, (4, 9))])
trainer.train()
