import torch

from modeling import TinyLlamaForCausalLM

torch.manual_seed(0)

model = TinyLlamaForCausalLM()
for name, param in model.named_parameters():
    param.requires_grad = "lora_" in name or name.startswith("lm_head")
model.gradient_checkpointing_enable()
model.train()

trainable = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.AdamW(trainable, lr=1e-3)
for step in range(3):
    input_ids = torch.randint(0, 32, (2, 6))
    loss = model(input_ids, labels=input_ids)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
