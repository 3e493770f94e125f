# plain-torch: runs
"""GG009 and a reentrant checkpoint: a frozen base model whose only trainable parameters are
adapters inside checkpointed blocks (LoRA with `enable_input_require_grads`). The graph the loss
shows reaches only the embedding output made to require grad: the adapters are behind the
checkpoint's node, which recomputes its forward with grad in backward. Quiet; the same model with
the loss re-wrapped (`torch.tensor(loss.item(), requires_grad=True)`) is still reported."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class Adapter(nn.Module):
    def __init__(self, base):
        super().__init__()
        self.base = base
        self.lora_A = nn.Linear(8, 2, bias=False)
        self.lora_B = nn.Linear(2, 8, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
        self.head = nn.Linear(8, 1)

    def forward(self, ids):
        h = self.embed(ids)
        for block in self.blocks:
            h = checkpoint(lambda t, b=block: torch.tanh(b(t)), h, use_reentrant=True)
        return self.head(h.mean(1))


def setup():
    torch.manual_seed(0)
    model = Net()
    model.requires_grad_(False)
    # what transformers' enable_input_require_grads does: the embedding output requires grad
    model.embed.register_forward_hook(lambda module, inputs, output: output.requires_grad_(True))  # expect: GG103
    for i, block in enumerate(model.blocks):
        model.blocks[i] = Adapter(block)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    return model, opt, torch.randint(0, 20, (4, 5)), torch.randn(4, 1)


def buggy():
    model, opt, ids, y = setup()
    for _ in range(2):
        opt.zero_grad()
        raw = F.mse_loss(model(ids), y)
        loss = torch.tensor(raw.item(), requires_grad=True)  # expect: GG103 loss
        loss.backward()  # expect: GG009 loss
        opt.step()  # expect: GG008 model.blocks
    assert model.blocks[0].lora_A.weight.grad is None


def clean():
    model, opt, ids, y = setup()
    for _ in range(3):
        opt.zero_grad()
        loss = F.mse_loss(model(ids), y)
        loss.backward()
        opt.step()
    assert model.blocks[0].lora_A.weight.grad is not None
