from collections import defaultdict, deque

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class LlamaModel(nn.Module):
    def __init__(self, vocab_size=50, hidden_size=16):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.layers = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.GELU())


class LlamaForCausalLM(nn.Module):
    def __init__(self, vocab_size=50, hidden_size=16):
        super().__init__()
        self.model = LlamaModel(vocab_size, hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size)

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def enable_input_require_grads(self):
        def make_inputs_require_grads(module, input, output):
            output.requires_grad_(True)

        self._require_grads_hook = self.get_input_embeddings().register_forward_hook(make_inputs_require_grads)

    def forward(self, inputs_embeds):
        return self.lm_head(self.model.layers(inputs_embeds))


class VisionEncoder(nn.Module):
    def __init__(self, hidden_size=16):
        super().__init__()
        self.mm_projector = nn.Linear(12, hidden_size)

    def forward(self, images, config):
        return [self.mm_projector(image.flatten(1)) for image in images]


class LlavaLlamaModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.llm = LlamaForCausalLM()
        self.encoders = nn.ModuleDict({"image": VisionEncoder()})

    def __embed_media_tokens(self, media, media_config):
        embeds = defaultdict(deque)
        for name in media:
            if self.training and len(media[name]) == 0:
                dummy = torch.zeros(1, 3, 2, 2)
                embeds["dummy"].extend(self.encoders[name]([dummy], media_config[name]))
                continue
            embeds[name] = deque(self.encoders[name](media[name], media_config[name]))
        return embeds

    def _embed(self, input_ids, media, media_config):
        text_embeds = self.llm.model.embed_tokens(input_ids)
        media_embeds = self.__embed_media_tokens(media, media_config)
        while media_embeds.get("dummy"):
            dummy_embed = media_embeds["dummy"].popleft()
            text_embeds += torch.sum(dummy_embed) * 0
        return text_embeds

    def forward(self, input_ids, media, media_config, labels):
        inputs_embeds = self._embed(input_ids, media, media_config)
        logits = self.llm(inputs_embeds)
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten())


model = LlavaLlamaModel()
model.llm.model.embed_tokens.weight.requires_grad_(False)
model.llm.enable_input_require_grads()
model.train()
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
for step in range(2):
    input_ids = torch.randint(0, 50, (2, 6))
    loss = model(input_ids, {"image": []}, {"image": {}}, labels=input_ids)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
