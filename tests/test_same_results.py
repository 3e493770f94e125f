"""The guard never changes what training computes: parameters, gradients, buffers, optimizer state
and the RNG state after N steps are bit-identical with and without it, in every mode.

Each workload builds its model from a fixed seed, trains a few steps, and every optimizer step is
observed by a global step post hook (registered outside the guard, the same in both runs) that copies
parameters and gradients. The guarded runs go past `record_iterations` so that both the full
recording and the light mode are compared.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.optimizer import register_optimizer_step_post_hook

from graphguard import GraphGuard

STEPS = 4  # > record_iterations (2): full recording, then light mode
GUARD_CONFIGS = [
    pytest.param(dict(mode=m, **ri), id=f"{m}-{name}")
    for m in ("raise", "warn", "collect")
    for name, ri in (("default", {}), ("always", {"record_iterations": None}))
]
FIXED = Path(__file__).resolve().parent.parent / "examples" / "ellipse" / "fixed.py"


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models on a shared 2-core machine: intra-op threads only add contention. Both runs of
    a comparison use the same setting, so the comparison is unaffected."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@dataclass
class Trace:
    """Everything a run computed, copied as plain tensors."""

    steps: list[list[tuple[torch.Tensor, torch.Tensor | None]]] = field(default_factory=list)
    final: dict[str, torch.Tensor] = field(default_factory=dict)
    result: Any = None
    rng: torch.Tensor | None = None


def _copy_step(trace: Trace) -> Callable[..., None]:
    def hook(opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        trace.steps.append([(p.detach().clone(), None if p.grad is None else p.grad.detach().clone())
                            for g in opt.param_groups for p in g["params"]])
    return hook


def _flat_state(model: nn.Module | None, opt: torch.optim.Optimizer | None) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    if model is not None:
        for k, v in model.state_dict().items():  # parameters and buffers (BatchNorm statistics)
            out[f"model.{k}"] = v.detach().clone()
        for k, p in model.named_parameters():
            if p.grad is not None:
                out[f"grad.{k}"] = p.grad.detach().clone()
    if opt is not None:
        for pid, st in opt.state_dict()["state"].items():
            for k, v in st.items():
                if isinstance(v, torch.Tensor):
                    out[f"opt.{pid}.{k}"] = v.detach().clone()
    return out


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().reshape(-1).contiguous().view(torch.uint8)


def assert_bit_identical(a: torch.Tensor | None, b: torch.Tensor | None, what: str) -> None:
    assert (a is None) == (b is None), what
    if a is None:
        return
    assert a.dtype == b.dtype and a.shape == b.shape, what
    assert torch.equal(_bits(a), _bits(b)), f"{what} differs"


def assert_same_trace(plain: Trace, guarded: Trace) -> None:
    assert len(plain.steps) == len(guarded.steps) and plain.steps, "number of optimizer steps"
    for i, (ps, gs) in enumerate(zip(plain.steps, guarded.steps)):
        assert len(ps) == len(gs)
        for j, ((p1, g1), (p2, g2)) in enumerate(zip(ps, gs)):
            assert_bit_identical(p1, p2, f"step {i} param {j}")
            assert_bit_identical(g1, g2, f"step {i} grad {j}")
    assert plain.final.keys() == guarded.final.keys()
    for k in plain.final:
        assert_bit_identical(plain.final[k], guarded.final[k], k)
    assert_bit_identical(plain.rng, guarded.rng, "RNG state")
    r1, r2 = plain.result, guarded.result
    if isinstance(r1, (list, tuple)) and r1 and isinstance(r1[0], torch.Tensor):
        assert len(r1) == len(r2)
        for i, (a, b) in enumerate(zip(r1, r2)):
            assert_bit_identical(a, b, f"result {i}")
    elif isinstance(r1, torch.Tensor):
        assert_bit_identical(r1, r2, "result")
    else:
        assert r1 == r2


# ---- workloads: each returns (model, optimizer, result) and is plain, legitimate training code ----

def _batches(n: int, shape: tuple[int, ...], classes: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(torch.randn(*shape), torch.randint(0, classes, (shape[0],))) for _ in range(n)]


def mlp(make_opt: Callable[[Any], torch.optim.Optimizer]) -> tuple:
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(inplace=True), nn.Dropout(0.2),
                          nn.Linear(32, 32), nn.ReLU(inplace=True), nn.Linear(32, 3))
    opt = make_opt(model.parameters())
    losses = []
    for x, y in _batches(STEPS, (8, 10), 3):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, opt, losses


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(6, 8, 3)
        self.fc = nn.Linear(8 * 3 * 3, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(self.relu(self.bn(self.conv1(x))), 2)
        x = F.relu(self.conv2(x), inplace=True)
        x = F.adaptive_avg_pool2d(x, 3)
        return self.fc(torch.flatten(x, 1))


def cnn(make_opt: Callable[[Any], torch.optim.Optimizer]) -> tuple:
    model = SmallCNN()
    opt = make_opt(model.parameters())
    for x, y in _batches(STEPS, (4, 1, 12, 12), 4):
        opt.zero_grad(set_to_none=False)
        out = model(x)
        out.add_(0.0)  # in-place on a non-leaf output, legal: AddBackward saves nothing
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
    model.eval()
    evaluated = model(torch.randn(2, 1, 12, 12))  # evaluation without no_grad, graph dropped
    return model, opt, evaluated.detach()


class TinyLSTM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.head = nn.Linear(16, 20)

    def forward(self, tokens: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
        out, state = self.lstm(self.emb(tokens), state)
        return self.head(out), state


def lstm(make_opt: Callable[[Any], torch.optim.Optimizer]) -> tuple:
    model = TinyLSTM()
    opt = make_opt(model.parameters())
    text = torch.randint(0, 20, (2, 6 * STEPS + 1))
    state = None
    for i in range(STEPS):
        chunk, nxt = text[:, 6 * i:6 * i + 6], text[:, 6 * i + 1:6 * i + 7]
        if state is not None:
            state = tuple(s.detach() for s in state)  # truncated BPTT
        logits, state = model(chunk, state)
        loss = F.cross_entropy(logits.reshape(-1, 20), nxt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
    return model, opt, [s.detach() for s in state]


def transformer(make_opt: Callable[[Any], torch.optim.Optimizer]) -> tuple:
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.1,
                                       batch_first=True)
    model = nn.Sequential(layer, nn.Linear(16, 16))
    opt = make_opt(model.parameters())
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(STEPS):
        x = torch.randn(3, 5, 16)
        opt.zero_grad()
        loss = F.mse_loss(model(x), x.roll(1, dims=1))
        loss.backward()
        opt.step()
        sched.step()
    return model, opt, sched.get_last_lr()


def accumulate_and_penalty(make_opt: Callable[[Any], torch.optim.Optimizer]) -> tuple:
    """Gradient accumulation over two micro-batches, plus a WGAN-GP style create_graph penalty."""
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = make_opt(model.parameters())
    for _ in range(STEPS):
        opt.zero_grad()
        for _micro in range(2):
            x = torch.randn(4, 6, requires_grad=True)
            out = model(x)
            (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
            loss = out.mean() + 0.1 * ((g.norm(2, dim=1) - 1) ** 2).mean()
            (loss / 2).backward()
        opt.step()
    return model, opt, None


def two_losses_retained(make_opt: Callable[[Any], torch.optim.Optimizer]) -> tuple:
    """Two losses on one trunk, retain_graph=True on the first backward: legitimate."""
    trunk, a, b = nn.Linear(5, 8), nn.Linear(8, 1), nn.Linear(8, 1)
    model = nn.ModuleList([trunk, a, b])
    opt = make_opt(model.parameters())
    for _ in range(STEPS):
        h = torch.relu(trunk(torch.randn(4, 5)))
        opt.zero_grad()
        a(h).pow(2).mean().backward(retain_graph=True)
        b(h).abs().mean().backward()
        opt.step()
    return model, opt, None


def lbfgs(_make_opt: Any) -> tuple:
    model = nn.Linear(4, 1)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=3)
    x, y = torch.randn(16, 4), torch.randn(16, 1)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss

    for _ in range(STEPS):
        opt.step(closure)
    return model, opt, None


def ellipse(_make_opt: Any) -> tuple:
    spec = importlib.util.spec_from_file_location("gg_same_results_fixed", FIXED)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        axes = mod.main(steps=STEPS, log_every=1)
    return None, None, (axes, out.getvalue())


OPTIMIZERS: dict[str, Callable[[Any], torch.optim.Optimizer]] = {
    "sgd-momentum": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, foreach=False),
    "sgd-momentum-foreach": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True,
                                                      weight_decay=1e-3, foreach=True),
    "sgd-fused": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, fused=True),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-2, foreach=False),
    "adam-foreach": lambda ps: torch.optim.Adam(ps, lr=1e-2, foreach=True),
    "adam-fused-amsgrad": lambda ps: torch.optim.Adam(ps, lr=1e-2, fused=True, amsgrad=True),
    "adamw-foreach": lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1, foreach=True),
    "adamw-fused": lambda ps: torch.optim.AdamW(ps, lr=1e-2, fused=True),
    "rmsprop-foreach": lambda ps: torch.optim.RMSprop(ps, lr=1e-3, momentum=0.5, foreach=True),
    "adagrad": lambda ps: torch.optim.Adagrad(ps, lr=1e-2),
}

# Every workload in all six guard configurations; the remaining optimizer variants in the two
# extremes (raise with the default light mode, collect recording everything), to stay fast.
WORKLOADS = [
    ("mlp", mlp, "adam-foreach"), ("mlp", mlp, "sgd-momentum"),
    ("cnn", cnn, "sgd-momentum-foreach"), ("lstm", lstm, "adam-foreach"),
    ("transformer", transformer, "adamw-foreach"),
    ("accumulate-penalty", accumulate_and_penalty, "adam"),
    ("two-losses-retained", two_losses_retained, "sgd-momentum-foreach"),
    ("lbfgs", lbfgs, "-"), ("ellipse", ellipse, "-"),
]
VARIANTS = (
    [("mlp", mlp, name) for name in OPTIMIZERS if name not in ("adam-foreach", "sgd-momentum")]
    + [("cnn", cnn, "adamw-fused"), ("lstm", lstm, "sgd-momentum"),
       ("transformer", transformer, "adam-fused-amsgrad")]
)
CASES = (
    [pytest.param(*w, c.values[0], id=f"{w[0]}-{w[2]}-{c.id}") for w in WORKLOADS for c in GUARD_CONFIGS]
    + [pytest.param(*w, c.values[0], id=f"{w[0]}-{w[2]}-{c.id}") for w in VARIANTS
       for c in GUARD_CONFIGS if c.id in ("raise-default", "collect-always")]
)


def run(workload: Callable[..., tuple], opt_name: str, guard_kwargs: dict | None) -> tuple[Trace, Any]:
    """Run a workload from a fixed seed, plain (guard_kwargs None) or inside a GraphGuard."""
    trace = Trace()
    torch.manual_seed(1234)
    make_opt = OPTIMIZERS.get(opt_name)
    handle = register_optimizer_step_post_hook(_copy_step(trace))
    guard = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # findings in warn mode must not fail the run
            if guard_kwargs is None:
                model, opt, result = workload(make_opt)
            else:
                with GraphGuard(**guard_kwargs) as guard:
                    model, opt, result = workload(make_opt)
    finally:
        handle.remove()
    trace.final = _flat_state(model, opt)
    trace.result = result
    trace.rng = torch.get_rng_state()
    return trace, guard


_PLAIN: dict[tuple[str, str], Trace] = {}


def plain_trace(name: str, workload: Callable[..., tuple], opt_name: str) -> Trace:
    key = (name, opt_name)
    if key not in _PLAIN:
        _PLAIN[key] = run(workload, opt_name, None)[0]
    return _PLAIN[key]


@pytest.mark.parametrize("name,workload,opt_name,config", CASES)
def test_guarded_run_is_bit_identical(name: str, workload: Callable[..., tuple], opt_name: str,
                                      config: dict) -> None:
    plain = plain_trace(name, workload, opt_name)
    guarded, guard = run(workload, opt_name, config)
    if name == "ellipse":
        (a1, log1), (a2, log2) = plain.result, guarded.result
        assert_bit_identical(a1, a2, "final axes")
        assert log1 == log2
        plain, guarded = Trace(plain.steps, plain.final, None, plain.rng), \
            Trace(guarded.steps, guarded.final, None, guarded.rng)
    assert_same_trace(plain, guarded)
    # Legitimate training code: graphguard must neither fail internally nor call it an error.
    assert [f.code for f in guard.findings if f.code == "GG901" or f.severity == "error"] == []
    assert guard.steps == len(guarded.steps)


def test_plain_runs_are_reproducible() -> None:
    """The comparison means something only if two plain runs agree with each other."""
    for name, workload, opt_name in (("mlp", mlp, "adam-foreach"), ("transformer", transformer,
                                                                     "adamw-foreach")):
        first = run(workload, opt_name, None)[0]
        second = run(workload, opt_name, None)[0]
        assert_same_trace(first, second)


def test_comparison_detects_a_one_ulp_change() -> None:
    """The bitwise check fails on the smallest possible change (so the tests above could fail)."""
    a = torch.tensor([1.0, 2.0])
    b = a.clone()
    b[1] = torch.nextafter(b[1], torch.tensor(3.0))
    with pytest.raises(AssertionError):
        assert_bit_identical(a, b, "x")


def test_capturable_is_unsupported_on_cpu() -> None:
    """capturable=True needs an accelerator on torch 2.13; if that changes, add it to OPTIMIZERS."""
    p = nn.Parameter(torch.randn(2))
    p.grad = torch.ones(2)
    with pytest.raises(Exception, match="capturable"):
        torch.optim.Adam([p], capturable=True).step()


def test_a_perturbing_guard_would_be_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: a guard that nudged saved tensors, or drew one random number, fails the check."""
    from graphguard.capture.recorder import Recorder

    plain = run(mlp, "adam", None)[0]
    orig_unpack = Recorder.unpack

    def nudged(p: Any) -> torch.Tensor:
        t = orig_unpack(p)
        return t * (1 + 2 ** -20) if t.is_floating_point() else t

    monkeypatch.setattr(Recorder, "unpack", staticmethod(nudged))
    with pytest.raises(AssertionError, match="differs"):
        assert_same_trace(plain, run(mlp, "adam", {"mode": "collect"})[0])
    monkeypatch.setattr(Recorder, "unpack", staticmethod(orig_unpack))

    orig_on_op = Recorder.on_op

    def on_op_drawing_rng(self: Recorder, func: Any, name: str, args: tuple, kwargs: dict) -> Any:
        with torch._C.DisableTorchFunction():
            torch.rand(1)
        return orig_on_op(self, func, name, args, kwargs)

    monkeypatch.setattr(Recorder, "on_op", on_op_drawing_rng)
    with pytest.raises(AssertionError, match="differs"):
        assert_same_trace(plain, run(mlp, "adam", {"mode": "collect"})[0])
