"""The training steps the overhead benchmark times: each a closure over its own model and data."""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["Workload", "WORKLOADS", "make_workload"]

ROOT = Path(__file__).resolve().parent.parent

Step = Callable[[], float]


@dataclass(frozen=True)
class Workload:
    """A named training step and the overhead budget it is held to (ratio to plain)."""

    name: str
    description: str
    budget: float  # default GraphGuard configuration, steady state, at most this ratio to plain
    build: Callable[[], Step]  # returns a fresh step() over fresh state


def _classifier_step(model: Callable[[torch.Tensor], torch.Tensor], opt: torch.optim.Optimizer,
                     x: torch.Tensor, y: torch.Tensor) -> Step:
    """One classification step: zero_grad, cross-entropy of model(x) against y, backward, step."""
    def step() -> float:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def _mlp() -> Step:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x, y = torch.randn(64, 512), torch.randint(0, 10, (64,))

    return _classifier_step(model, opt, x, y)


class _SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def _cnn() -> Step:
    torch.manual_seed(0)
    model = _SmallCNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))

    return _classifier_step(model, opt, x, y)


class _WordLM(nn.Module):
    """The word-language-model shape: embedding, a 2-layer LSTM, a decoder to the vocabulary."""

    def __init__(self, vocab: int = 1000, hidden: int = 200) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.rnn = nn.LSTM(hidden, hidden, num_layers=2)
        self.dec = nn.Linear(hidden, vocab)

    def forward(self, x: torch.Tensor, h: tuple[torch.Tensor, torch.Tensor]):
        out, h = self.rnn(self.emb(x), h)
        return self.dec(out), h


def _lstm() -> Step:
    torch.manual_seed(0)
    seq, batch, hidden, vocab = 35, 20, 200, 1000
    model = _WordLM(vocab, hidden)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randint(0, vocab, (seq, batch))
    y = torch.randint(0, vocab, (seq * batch,))
    state = {"h": (torch.zeros(2, batch, hidden), torch.zeros(2, batch, hidden))}

    def step() -> float:
        # truncated BPTT, as the word-language-model example does
        h = tuple(t.detach() for t in state["h"])
        opt.zero_grad()
        out, state["h"] = model(x, h)
        loss = F.cross_entropy(out.view(-1, vocab), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        return loss.item()

    return step


def _lstm_cell() -> Step:
    torch.manual_seed(0)
    seq, batch, hidden = 35, 20, 200
    cell = nn.LSTMCell(hidden, hidden)
    head = nn.Linear(hidden, 1)
    opt = torch.optim.Adam([*cell.parameters(), *head.parameters()], lr=1e-3)
    xs = torch.randn(seq, batch, hidden)
    ys = torch.randn(seq, batch, 1)

    def step() -> float:
        opt.zero_grad()
        h = torch.zeros(batch, hidden)
        c = torch.zeros(batch, hidden)
        loss = torch.zeros(())
        for t in range(seq):  # unrolled in Python: many small ops per step
            h, c = cell(xs[t], (h, c))
            loss = loss + F.mse_loss(head(h), ys[t])
        loss.backward()
        opt.step()
        return loss.item()

    return step


def _encoder_step(d_model: int, ff: int) -> Step:
    """A 2-layer transformer encoder classifying sequences (batch 16, seq 32), AdamW."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=4, dim_feedforward=ff, dropout=0.1,
                                       batch_first=True)
    enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    head = nn.Linear(d_model, 10)
    opt = torch.optim.AdamW([*enc.parameters(), *head.parameters()], lr=1e-4)
    x, y = torch.randn(16, 32, d_model), torch.randint(0, 10, (16,))

    return _classifier_step(lambda t: head(enc(t).mean(dim=1)), opt, x, y)


def _transformer() -> Step:
    return _encoder_step(128, 256)


def _transformer_small() -> Step:
    """The small-op transformer: d_model 64, where per-op and per-node costs show most."""
    return _encoder_step(64, 128)


class _GPTBlock(nn.Module):
    """A pre-norm GPT block written out as minGPT/nanoGPT do: causal self-attention and an MLP."""

    def __init__(self, d: int, heads: int, seq: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)
        att = F.softmax(att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def _gpt() -> Step:
    torch.manual_seed(0)
    vocab, d, seq, batch = 256, 96, 48, 8
    emb, pos = nn.Embedding(vocab, d), nn.Parameter(torch.zeros(1, seq, d))
    blocks = nn.Sequential(*[_GPTBlock(d, 4, seq) for _ in range(3)])
    ln, head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
    params = [*emb.parameters(), pos, *blocks.parameters(), *ln.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=3e-4, weight_decay=0.1)
    x = torch.randint(0, vocab, (batch, seq))
    y = torch.randint(0, vocab, (batch, seq))

    def step() -> float:
        logits = head(ln(blocks(emb(x) + pos)))
        loss = F.cross_entropy(logits.view(-1, vocab), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        return loss.item()

    return step


class _BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                      if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.b1(self.c1(x)), inplace=True)
        return F.relu(self.b2(self.c2(out)) + self.short(x))


def _resnet() -> Step:
    """A ResNet-style CNN step (CIFAR ResNet shape, narrowed): stem, 3 stages of 2 basic blocks
    with BatchNorm and in-place ReLU, SGD with momentum and weight decay."""
    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True)]
    cin = 16
    for cout, stride in [(16, 1), (32, 2), (64, 2)]:
        layers += [_BasicBlock(cin, cout, stride), _BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    model = nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    x, y = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))

    return _classifier_step(model, opt, x, y)


def _ellipse() -> Step:
    # examples/ellipse/fixed.py itself, one train_step per benchmark step
    spec = importlib.util.spec_from_file_location("gg_bench_ellipse_fixed",
                                                  ROOT / "examples" / "ellipse" / "fixed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    w, h = mod.image_width, mod.image_height
    sphere_position = torch.tensor([w / 2, h / 2, 0])
    with torch.no_grad():
        ref = mod.apply_ellipse_mask(torch.zeros(w, h), sphere_position, [h / 3] * 3)
    pos = sphere_position.clone()
    axes = torch.tensor([w / 3 + 3.0, h / 3 - 2.0, h / 2], requires_grad=True)
    opt = torch.optim.Adam([axes], lr=0.5)
    crit = nn.MSELoss()

    def step() -> float:
        return mod.train_step(opt, crit, pos, axes, ref)

    return step


WORKLOADS: dict[str, Workload] = {w.name: w for w in [
    Workload("mlp", "MLP step, batch 64, 3x512 hidden, SGD", 1.05, _mlp),
    Workload("cnn", "small CNN step, 32x32 images, batch 32, Adam", 1.05, _cnn),
    Workload("resnet", "ResNet-style CNN step, 3 stages of 2 basic blocks, BatchNorm, batch 16", 1.05,
             _resnet),
    Workload("lstm", "nn.LSTM step, seq 35, batch 20, hidden 200, 2 layers", 1.05, _lstm),
    Workload("lstm_cell", "nn.LSTMCell loop unrolled in Python, 35 steps", 1.25, _lstm_cell),
    Workload("transformer_small", "TransformerEncoder step, 2 layers, d=64, seq 32, batch 16", 1.05,
             _transformer_small),
    Workload("transformer", "TransformerEncoder step, 2 layers, d=128, seq 32, batch 16", 1.05,
             _transformer),
    Workload("gpt", "GPT-style stack, 3 blocks, d=96, seq 48, AdamW, grad clipping", 1.05, _gpt),
    Workload("ellipse", "examples/ellipse/fixed.py train_step (a loop of small ops)", 1.25, _ellipse),
]}


def make_workload(name: str) -> Step:
    return WORKLOADS[name].build()
