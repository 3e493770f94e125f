import torch
import torch.nn as nn
import torch.nn.functional as F


class PolicyLM(nn.Module):
    def __init__(self, vocab=24, dim=16):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, input_ids):
        h, _ = self.rnn(self.embed_tokens(input_ids))
        return self.lm_head(h)

    def generate(self, prompt_ids, max_new_tokens=4):
        ids = prompt_ids
        for _ in range(max_new_tokens):
            logits = self(ids)[:, -1]
            next_id = torch.multinomial(F.softmax(logits, dim=-1), 1)
            ids = torch.cat([ids, next_id], dim=1)
        return ids


def reward_func(completion_ids):
    return (completion_ids % 2 == 0).float().mean(dim=1)


class GRPOTrainer:
    def __init__(self, model, num_generations=4, lr=1e-3):
        self.model = model
        self.num_generations = num_generations
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)

    def generate_completions(self, prompt_ids):
        prompts = prompt_ids.repeat_interleave(self.num_generations, dim=0)
        with torch.inference_mode():
            prompt_completion_ids = self.model.generate(prompts)
        return prompt_completion_ids

    def compute_loss(self, prompt_ids):
        prompt_completion_ids = self.generate_completions(prompt_ids)
        prompt_len = prompt_ids.size(1)
        completion_ids = prompt_completion_ids[:, prompt_len:]
        rewards = reward_func(completion_ids).view(-1, self.num_generations)
        advantages = (rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)
        advantages = advantages.view(-1, 1)
        logits = self.model(prompt_completion_ids)[:, prompt_len - 1:-1]
        logps = torch.log_softmax(logits, dim=-1).gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)
        return -(torch.exp(logps - logps.detach()) * advantages).mean()

    def training_step(self, prompt_ids):
        loss = self.compute_loss(prompt_ids)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


torch.manual_seed(0)
trainer = GRPOTrainer(PolicyLM())
for step in range(2):
    print(step, trainer.training_step(torch.randint(0, 24, (2, 3))))
