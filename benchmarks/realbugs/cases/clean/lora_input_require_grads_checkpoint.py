import math

import torch
import torch.nn as nn
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)


class LoraLayer(nn.Module):
    """y = base(x) + (dropout(x) @ A^T @ B^T) * scaling, with the base layer frozen and B zero-initialised."""

    def __init__(self, base_layer, r=4, lora_alpha=8, lora_dropout=0.05):
        super().__init__()
        self.base_layer = base_layer
        in_features, out_features = base_layer.weight.shape  # transformers Conv1D stores (in, out)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        self.lora_dropout = nn.Dropout(lora_dropout)
        self.scaling = lora_alpha / r
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        result = self.base_layer(x)
        return result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling


config = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2)
model = GPT2LMHeadModel(config)

# prepare_model_for_kbit_training-style: freeze the base model, make the embedding output require
# grad so a reentrant checkpoint of each block still gets an input that requires grad
for param in model.parameters():
    param.requires_grad = False
model.enable_input_require_grads()
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
model.config.use_cache = False

for block in model.transformer.h:
    block.attn.c_attn = LoraLayer(block.attn.c_attn)

trainable = [p for p in model.parameters() if p.requires_grad]
print("trainable params:", sum(p.numel() for p in trainable))
optimizer = torch.optim.AdamW(trainable, lr=1e-3)

model.train()
for step in range(6):
    input_ids = torch.randint(0, 64, (4, 16))
    outputs = model(input_ids=input_ids, labels=input_ids)
    loss = outputs.loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(step, loss.item())
