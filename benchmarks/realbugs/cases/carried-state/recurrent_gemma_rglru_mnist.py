import math
from types import SimpleNamespace

import torch
from torch import nn

torch.manual_seed(0)


class RecurrentGemmaRglru(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.block_width = config.lru_width // self.num_attention_heads
        self.recurrent_param = nn.Parameter(torch.empty([config.lru_width]))
        self.input_gate_weight = nn.Parameter(
            torch.empty([self.num_attention_heads, self.block_width, self.block_width]))
        self.input_gate_bias = nn.Parameter(torch.empty([self.num_attention_heads, self.block_width]))
        self.recurrent_gate_weight = nn.Parameter(
            torch.empty([self.num_attention_heads, self.block_width, self.block_width]))
        self.recurrent_gate_bias = nn.Parameter(torch.empty([self.num_attention_heads, self.block_width]))
        self.recurrent_states = None
        for w in (self.input_gate_weight, self.recurrent_gate_weight):
            nn.init.normal_(w, std=1.0 / math.sqrt(self.block_width))
        nn.init.zeros_(self.input_gate_bias)
        nn.init.zeros_(self.recurrent_gate_bias)
        nn.init.uniform_(self.recurrent_param, 0.5, 1.0)

    def forward(self, activations, position_ids):
        batch_size, seq_len, lru_width = activations.shape
        reset = position_ids[:, :, None] == 0

        reshape_act = activations.reshape(batch_size * seq_len, self.num_attention_heads, self.block_width)
        reshape_act = reshape_act.permute(1, 0, 2)

        res = torch.baddbmm(self.input_gate_bias[:, None, :], reshape_act, self.input_gate_weight)
        input_gate = torch.sigmoid(res.transpose(0, 1).reshape(batch_size, seq_len, lru_width))

        res = torch.baddbmm(self.recurrent_gate_bias[:, None, :], reshape_act, self.recurrent_gate_weight)
        recurrent_gate = torch.sigmoid(res.transpose(0, 1).reshape(batch_size, seq_len, lru_width))

        log_recurrent_gate = -8.0 * recurrent_gate * nn.functional.softplus(self.recurrent_param)
        recurrent_gate = torch.exp(log_recurrent_gate)
        a_square = torch.exp(2 * log_recurrent_gate)

        gated_inputs = activations * input_gate
        multiplier = torch.sqrt(1 - a_square + 1e-6)
        multiplier = reset + ~reset * multiplier
        normalized_x = gated_inputs * multiplier.type(activations.dtype)

        hidden_states, recurrent_states = self._rnn_scan(
            hidden_states=normalized_x,
            recurrent_gate=recurrent_gate,
            reset=reset,
            recurrent_states=self.recurrent_states,
        )
        self.recurrent_states = recurrent_states
        return hidden_states

    def _rnn_scan(self, hidden_states, recurrent_gate, reset, recurrent_states, acc_dtype=torch.float32):
        recurrent_gate = recurrent_gate * ~reset
        if recurrent_states is None:
            recurrent_states = torch.zeros(hidden_states[:, 0].shape, dtype=acc_dtype)
        contextualized_states = torch.zeros_like(hidden_states)
        for t in range(hidden_states.shape[1]):
            recurrent_states = recurrent_gate[:, t].type(acc_dtype) * recurrent_states + hidden_states[:, t].type(acc_dtype)
            contextualized_states[:, t] = recurrent_states.type(hidden_states.dtype)
        return contextualized_states, recurrent_states


class RGLRU(nn.Module):
    def __init__(self, config, num_classes=10):
        super().__init__()
        self.embed = nn.Linear(28, config.lru_width)
        self.rg_lru = RecurrentGemmaRglru(config)
        self.fc = nn.Linear(config.lru_width, num_classes)

    def forward(self, x):
        x = self.embed(x)
        position_ids = torch.arange(x.shape[1])[None, :].expand(x.shape[0], -1)
        x = self.rg_lru(x, position_ids)
        return self.fc(x[:, -1])


config = SimpleNamespace(lru_width=16, num_attention_heads=2)
model = RGLRU(config)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

images = torch.rand(64, 28, 28)
labels = torch.randint(0, 10, (64,))

for epoch in range(2):
    for i in range(0, 64, 16):
        outputs = model(images[i:i + 16])
        loss = criterion(outputs, labels[i:i + 16])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
