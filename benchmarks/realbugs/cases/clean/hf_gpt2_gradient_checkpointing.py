import torch
from torch.optim import AdamW
from transformers import GPT2Config, GPT2LMHeadModel, get_scheduler

torch.manual_seed(0)
config = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2)
model = GPT2LMHeadModel(config)
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
model.config.use_cache = False

optimizer = AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
num_training_steps = 6
gradient_accumulation_steps = 2
lr_scheduler = get_scheduler(name="linear", optimizer=optimizer, num_warmup_steps=1,
                             num_training_steps=num_training_steps)
train_dataloader = [{"input_ids": torch.randint(0, 64, (4, 16))} for _ in range(num_training_steps * 2)]

model.train()
for step, batch in enumerate(train_dataloader):
    batch["labels"] = batch["input_ids"].clone()
    outputs = model(**batch)
    loss = outputs.loss
    loss = loss / gradient_accumulation_steps
    loss.backward()
    if step % gradient_accumulation_steps == 0 or step == len(train_dataloader) - 1:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
    if step % 4 == 0:
        print(step, loss.item())

model.eval()
with torch.no_grad():
    generated = model.generate(torch.randint(0, 64, (1, 4)), max_new_tokens=4, do_sample=False, pad_token_id=0)
print(generated.shape)
