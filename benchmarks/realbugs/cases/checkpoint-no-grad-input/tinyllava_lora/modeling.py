import torch
import torch.nn as nn
import torch.utils.checkpoint


class LoraLinear(nn.Module):
    def __init__(self, in_features, out_features, r=4, lora_alpha=8):
        super().__init__()
        self.base_layer = nn.Linear(in_features, out_features)
        self.lora_A = nn.Linear(in_features, r, bias=False)
        self.lora_B = nn.Linear(r, out_features, bias=False)
        nn.init.normal_(self.lora_B.weight, std=0.02)
        self.scaling = lora_alpha / r

    def forward(self, x):
        return self.base_layer(x) + self.lora_B(self.lora_A(x)) * self.scaling


class DecoderLayer(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(hidden_size)
        self.q_proj = LoraLinear(hidden_size, hidden_size)
        self.mlp = nn.Sequential(nn.Linear(hidden_size, 2 * hidden_size), nn.GELU(), nn.Linear(2 * hidden_size, hidden_size))

    def forward(self, hidden_states):
        h = self.q_proj(self.input_layernorm(hidden_states))
        return hidden_states + self.mlp(h)


class TinyLlamaForCausalLM(nn.Module):
    def __init__(self, vocab_size=32, hidden_size=16, num_layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(hidden_size) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)
        self.gradient_checkpointing = False

    def gradient_checkpointing_enable(self):
        self.gradient_checkpointing = True

    def forward(self, input_ids, labels):
        hidden_states = self.embed_tokens(input_ids)
        for decoder_layer in self.layers:
            if self.gradient_checkpointing and self.training:
                hidden_states = torch.utils.checkpoint.checkpoint(decoder_layer, hidden_states, use_reentrant=True)
            else:
                hidden_states = decoder_layer(hidden_states)
        logits = self.lm_head(self.norm(hidden_states))
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
