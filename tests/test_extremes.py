"""Reliability at the edges: very deep and very wide graphs, custom autograd Functions,
checkpointing, unusual dtypes, sparse tensors, torch.compile, DataLoader worker processes and
threads. In each: the guard works, says nothing on correct code, does not change what training
computes, and neither crashes nor hangs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from graphguard import GraphGuard

SCRIPTS = Path(__file__).parent / "scripts"
EIGHT_MB = 8 * 1024 * 1024


# ---- helpers ----------------------------------------------------------------------------------
def codes(guard: GraphGuard) -> list[tuple[str, str | None]]:
    return [(f.code, f.subject.name) for f in guard.findings]


def loud(guard: GraphGuard) -> list[tuple[str, str | None, int | None]]:
    """Findings of severity warning or error (info findings are allowed on correct code)."""
    return [(f.code, f.subject.name, f.location and f.location.line)
            for f in guard.findings if f.severity in ("warning", "error")]


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


def params(module: nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def guarded(fn, **kw):
    """(guard, result) of fn() run inside a collecting guard."""
    with GraphGuard(mode="collect", **kw) as guard:
        out = fn()
    return guard, out


def guarded_raising(fn, **kw):
    """(guard, exception) of fn() inside a collecting guard; the exception PyTorch raised, if any."""
    err = None
    with GraphGuard(mode="collect", **kw) as guard:
        try:
            fn()
        except RuntimeError as e:
            err = e
    return guard, err


def line_of(fn, marker: str) -> int:
    """The line of `fn`'s source that contains `marker` (the tests assert on lines, not prose)."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def _small_stack() -> None:
    """In the child: an 8 MB soft stack limit, as on a stock Linux shell, so that the guard's own
    raise of the limit is what a deep chain relies on (pytest may run with a raised limit)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if hard == resource.RLIM_INFINITY or hard >= EIGHT_MB:
        resource.setrlimit(resource.RLIMIT_STACK, (EIGHT_MB, hard))


def run_script(*args: str, timeout: float = 600) -> tuple[int, dict | None, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, str(SCRIPTS / "deep_chain.py"), *args], capture_output=True,
                       text=True, timeout=timeout, preexec_fn=_small_stack, env=env)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    return p.returncode, json.loads(lines[-1]) if lines else None, p.stderr[-3000:]


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_STACK growth is Linux's")


# ---- a 200,000-node chain ---------------------------------------------------------------------
@linux_only
def test_premise_touched_deep_chain_overflows_an_8mb_stack():
    """Plain PyTorch, no graphguard: reading the grad_fn of every step of a 100,000-op chain makes
    its destruction overflow an 8 MB stack. This is why the guard raises the stack limit."""
    rc, _, _ = run_script("plain", "100000")
    if rc == 0:
        pytest.skip("this torch destroys touched deep chains without overflowing; nothing to guard")
    assert rc == -11  # SIGSEGV


@linux_only
@pytest.mark.slow
def test_200k_chain_fully_recorded_is_quiet_and_correct():
    rc, out, err = run_script("clean", "200000")
    assert rc == 0, f"crashed with {rc}: {err}"
    assert out == {"findings": [], "grad_ok": True, "recording": True}


@linux_only
@pytest.mark.slow
def test_stale_200k_chain_is_reported_without_crashing():
    rc, out, err = run_script("stale", "200000")
    assert rc == 0, f"crashed with {rc}: {err}"
    script = (SCRIPTS / "deep_chain.py").read_text().splitlines()
    line = next(i for i, text in enumerate(script, 1) if "# the stale backward" in text)
    assert out["findings"] == [["GG001", "ref", line]]
    assert out["raised"] == "RuntimeError"  # collect mode: PyTorch's own error still follows


@linux_only
@pytest.mark.slow
def test_deep_chain_in_a_thread_with_the_documented_stack_size():
    """Other threads keep their stack: the guard's docstring says to set threading.stack_size."""
    rc, out, err = run_script("thread", "200000")
    assert rc == 0, f"crashed with {rc}: {err}"
    assert out == {"findings": [], "grad_ok": True, "recording": False}


# ---- a graph with 10,000 leaves ---------------------------------------------------------------
def test_ten_thousand_leaves():
    def train():
        torch.manual_seed(0)
        leaves = [torch.randn(3, requires_grad=True) for _ in range(10_000)]
        # plain SGD: one op per leaf per step (Adam's per-tensor updates are ~15 tiny ops each)
        opt = torch.optim.SGD(leaves, lr=1e-2)
        for step in range(2):
            # one op gathers all 10,000 leaves: the per-parameter checks (no gradient, missing
            # zero_grad, unregistered...) and the walk see them all, at little per-op cost
            loss = (torch.stack(leaves) ** 2).sum(dim=1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return [p.detach().clone() for p in leaves]

    plain = train()
    guard, got = guarded(train)
    assert codes(guard) == []
    assert same(plain, got)


def test_ten_thousand_leaves_one_stale():
    """One stale leaf-fed node among 10,000 fresh ones is found and named."""
    torch.manual_seed(0)
    leaves = [torch.randn(2, requires_grad=True) for _ in range(10_000)]
    opt = torch.optim.SGD(leaves, lr=1e-2)

    def train():
        anchor = leaves[0] ** 2  # built once, reused: its graph is freed by the first backward
        for step in range(2):
            loss = torch.stack([p.sum() for p in leaves]).sum() + anchor.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()

    guard, err = guarded_raising(train)
    assert err is not None
    assert codes(guard) == [("GG001", "anchor")]


# ---- custom autograd.Functions ----------------------------------------------------------------
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class AddOneInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class Clamp01(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(0, 1)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ((x >= 0) & (x <= 1)).to(g.dtype)


def test_custom_functions_are_quiet_and_unchanged():
    def train():
        torch.manual_seed(0)
        lin = nn.Linear(3, 3)
        opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        for step in range(4):
            h = Square.apply(lin(torch.randn(5, 3)))
            h = AddOneInPlace.apply(h * 1.0)  # mark_dirty on a non-leaf
            loss = Clamp01.apply(h).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return params(lin)

    plain = train()
    guard, got = guarded(train)
    assert codes(guard) == []
    assert same(plain, got)


def test_stale_graph_through_a_custom_function():
    def train():
        torch.manual_seed(0)
        w = torch.randn(3, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        ref = Square.apply(w * 2)
        for step in range(2):
            loss = ((w - ref) ** 2).sum()
            opt.zero_grad()
            loss.backward()  # the second time: ref's custom node is freed
            opt.step()

    guard, err = guarded_raising(train)
    assert "second time" in str(err)
    line = line_of(train, "loss.backward()")
    assert [(f.code, f.subject.name, f.location.line) for f in guard.findings] == [("GG001", "ref", line)]


def test_saved_tensor_of_a_custom_function_modified_in_place():
    def train():
        w = torch.randn(3, requires_grad=True)
        h = w * 2
        y = Square.apply(h)  # saves h
        h.add_(1)
        y.sum().backward()

    guard, err = guarded_raising(train, select=["GG0"])
    assert err is not None  # PyTorch's version check (done by graphguard's unpack hook) still fires
    assert ("GG005", "h") in codes(guard)


# ---- torch.utils.checkpoint -------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 6), nn.Linear(6, 6)

    def forward(self, x):
        return x + self.b(torch.tanh(self.a(x)))


class CheckpointedNet(nn.Module):
    def __init__(self, reentrant: bool):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(3))
        self.head = nn.Linear(6, 1)
        self.reentrant = reentrant

    def forward(self, x):
        for blk in self.blocks:
            x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=self.reentrant)
        return self.head(x)


@pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_checkpoint_is_quiet_and_unchanged(reentrant):
    def train():
        torch.manual_seed(0)
        net = CheckpointedNet(reentrant)
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
        for step in range(3):
            # a reentrant checkpoint needs an input that requires grad to give the blocks gradients
            x = torch.randn(8, 6, requires_grad=reentrant)
            loss = F.mse_loss(net(x), torch.zeros(8, 1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        return params(net)

    plain = train()
    guard, got = guarded(train, record_iterations=None)
    assert codes(guard) == []  # GG103 must not call the reentrant input's requires_grad needless
    assert same(plain, got)


def test_reentrant_checkpoint_without_grad_input_starves_the_blocks():
    """The classic reentrant-checkpoint trap: no input requires grad, so the blocks get none."""
    torch.manual_seed(0)
    net = CheckpointedNet(reentrant=True)
    opt = torch.optim.SGD(net.parameters(), lr=1e-2)

    def train():
        loss = F.mse_loss(net(torch.randn(8, 6)), torch.zeros(8, 1))
        opt.zero_grad()
        loss.backward()
        opt.step()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's own "None of the inputs have requires_grad"
        guard, _ = guarded(train)
    # GG015 names the checkpoint call's input; GG008 the blocks' parameters that got no gradient
    assert {c for c, _ in codes(guard)} == {"GG008", "GG015"}
    assert all(name.startswith("net.blocks") for c, name in codes(guard) if c == "GG008")


@pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_stale_graph_through_checkpoint(reentrant):
    def train():
        torch.manual_seed(0)
        blk = Block()
        w = torch.randn(8, 6, requires_grad=True)
        opt = torch.optim.SGD([w, *blk.parameters()], lr=0.1)
        ref = torch.utils.checkpoint.checkpoint(blk, w * 2, use_reentrant=reentrant)
        for step in range(2):
            loss = ((w - ref) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()

    guard, err = guarded_raising(train)
    assert err is not None
    assert [(f.code, f.subject.name, f.location.line) for f in guard.findings] == [
        ("GG001", "ref", line_of(train, "loss.backward()"))]


# ---- complex and half dtypes ------------------------------------------------------------------
def _mlp_train(dtype, autocast: bool = False):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    if not autocast:
        model = model.to(dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(3):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        if autocast:
            with torch.autocast("cpu", dtype=dtype):
                loss = F.mse_loss(model(x).float(), y)
        else:
            loss = ((model(x.to(dtype)) - y.to(dtype)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return params(model)


def _complex_train():
    torch.manual_seed(0)
    w = torch.randn(4, 4, dtype=torch.cfloat, requires_grad=True)
    opt = torch.optim.Adam([w], lr=0.05)  # Adam steps complex parameters through view_as_real
    for step in range(3):
        z = torch.randn(8, 4, dtype=torch.cfloat) @ w
        loss = (z.abs() ** 2).mean() + torch.fft.fft(z).real.mean() + torch.view_as_real(z).sum() * 0.01
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [w.detach().clone()]


@pytest.mark.parametrize("case", ["float16", "bfloat16", "autocast-bfloat16", "complex64"])
def test_dtypes_are_quiet_and_unchanged(case):
    train = {"float16": lambda: _mlp_train(torch.float16),
             "bfloat16": lambda: _mlp_train(torch.bfloat16),
             "autocast-bfloat16": lambda: _mlp_train(torch.bfloat16, autocast=True),
             "complex64": _complex_train}[case]
    plain = train()
    guard, got = guarded(train)
    assert codes(guard) == []
    assert same(plain, got)


@pytest.mark.parametrize("dtype", [torch.complex128, torch.bfloat16], ids=str)
def test_stale_graph_in_other_dtypes(dtype):
    def train():
        w = torch.randn(3, dtype=dtype, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        ref = (w * 2).exp()
        for step in range(2):
            loss = (w - ref).abs().pow(2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()

    guard, err = guarded_raising(train)
    assert err is not None
    assert [(f.code, f.subject.name, f.location.line) for f in guard.findings] == [
        ("GG001", "ref", line_of(train, "loss.backward()"))]


# ---- sparse tensors ---------------------------------------------------------------------------
def _sparse_embedding_train():
    torch.manual_seed(0)
    emb, head = nn.Embedding(50, 8, sparse=True), nn.Linear(8, 1)
    sparse_opt = torch.optim.SparseAdam(list(emb.parameters()), lr=1e-2)
    dense_opt = torch.optim.SGD(head.parameters(), lr=0.1)
    for step in range(4):
        idx, y = torch.randint(0, 50, (16,)), torch.randn(16, 1)
        loss = F.mse_loss(head(emb(idx)), y)
        sparse_opt.zero_grad()
        dense_opt.zero_grad()
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
    assert emb.weight.grad.is_sparse
    return params(emb) + params(head)


def _sparse_mm_train():
    torch.manual_seed(0)
    idx = torch.tensor([[0, 1, 2, 3, 4], [1, 0, 3, 2, 4]])
    adj = torch.sparse_coo_tensor(idx, torch.randn(5), (5, 5)).coalesce()
    w = torch.randn(5, 3, requires_grad=True)
    s = torch.sparse_coo_tensor(idx, torch.randn(5), (5, 5)).coalesce().requires_grad_()
    opt = torch.optim.SGD([w], lr=0.1)
    for step in range(4):
        out = torch.sparse.mm(adj, w) + torch.sparse.mm(s, w)
        loss = out.pow(2).sum() + torch.sparse.sum(s * 2)
        opt.zero_grad()
        s.grad = None
        loss.backward()
        opt.step()
        assert s.grad is not None and s.grad.is_sparse
    (adj.to_sparse_csr() @ w).sum().backward()
    return [w.detach().clone(), w.grad.clone()]


@pytest.mark.filterwarnings("ignore:Sparse")
@pytest.mark.parametrize("case", ["embedding-sparseadam", "sparse-mm"])
def test_sparse_is_quiet_and_unchanged(case):
    train = _sparse_embedding_train if case == "embedding-sparseadam" else _sparse_mm_train
    plain = train()
    guard, got = guarded(train)
    assert codes(guard) == []
    assert same(plain, got)


def test_stale_graph_through_a_sparse_embedding():
    def train():
        torch.manual_seed(0)
        emb = nn.Embedding(50, 8, sparse=True)
        opt = torch.optim.SparseAdam(list(emb.parameters()), lr=1e-2)
        ref = emb(torch.arange(4)).sum(0) * 2
        for step in range(2):
            loss = (emb(torch.arange(4, 8)).sum(0) - ref).pow(2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()

    guard, err = guarded_raising(train)
    assert err is not None
    assert [(f.code, f.subject.name, f.location.line) for f in guard.findings] == [
        ("GG001", "ref", line_of(train, "loss.backward()"))]


# ---- torch.compile ----------------------------------------------------------------------------
# aot_eager compiles through Dynamo and AOTAutograd (the path inductor takes, with the same
# CompiledFunctionBackward node) without a C++ toolchain: seconds instead of minutes on CPU.
def _compiled_train(backend: str, steps: int = 3):
    torch.manual_seed(0)
    torch._dynamo.reset()
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    cmodel = torch.compile(model, backend=backend)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        pred = cmodel(x)
        loss = F.mse_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return params(model)


def test_compiled_module_works_and_says_what_it_cannot_see():
    plain = _compiled_train("aot_eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        guard, got = guarded(lambda: _compiled_train("aot_eager"))
    # Dynamo must neither trace graphguard's code (it would warn about sys._getframe) nor warn
    # about graph breaks in it
    assert [str(w.message) for w in caught if "graphguard" in str(w.message) or "_getframe" in str(w.message)] == []
    assert same(plain, got)
    assert loud(guard) == []
    assert [(f.code, f.severity, f.subject.name) for f in guard.findings] == [("GG902", "info", "pred")]
    assert guard.steps == 3 and guard.backward_calls == 3


def test_compiled_training_step_is_counted_once():
    """A compiled function that calls backward and optimizer.step: Dynamo must not trace (and
    replay) graphguard's bookkeeping, and AOTAutograd's traced backward is not the user's."""

    def train():
        torch.manual_seed(0)
        torch._dynamo.reset()
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        opt = torch.optim.Adam(model.parameters(), lr=0.1)

        @torch.compile(backend="aot_eager")
        def step(x, y):
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.detach()

        for i in range(3):
            step(torch.randn(16, 4), torch.randn(16, 1))
        return params(model)

    plain = train()
    guard, got = guarded(train)
    assert same(plain, got)
    assert loud(guard) == []
    assert (guard.iteration, guard.backward_calls, guard.steps) == (3, 3, 3)


def test_stale_graph_through_a_compiled_module():
    def train():
        torch.manual_seed(0)
        torch._dynamo.reset()
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
        cmodel = torch.compile(model, backend="aot_eager")
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        ref = cmodel(torch.randn(16, 4))
        for step in range(2):
            loss = ((cmodel(torch.randn(16, 4)) - ref) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    guard, err = guarded_raising(train)
    assert err is not None
    line = line_of(train, "loss.backward()")
    assert [(f.code, f.subject.name, f.location.line) for f in guard.findings if f.code != "GG902"] == [
        ("GG001", "ref", line)]


def test_guard_does_not_import_dynamo_by_itself():
    """Importing Dynamo takes seconds: a loop that never compiles (nor calls
    optimizer.zero_grad, which imports it) must not pay for graphguard's torch.compile support."""
    code = (
        "import sys, torch\n"
        "from graphguard import GraphGuard\n"
        "m = torch.nn.Linear(3, 1)\n"
        "with GraphGuard():\n"
        "    for i in range(3):\n"
        "        m.zero_grad()\n"
        "        m(torch.randn(2, 3)).sum().backward()\n"
        "        with torch.no_grad():\n"
        "            for p in m.parameters():\n"
        "                p -= 0.1 * p.grad\n"
        "print('torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_inductor_compiled_module():
    """The default backend (C++ code generation): minutes cold on a small CPU machine."""
    try:
        plain = _compiled_train("inductor")
    except Exception as err:  # no working C++ compiler: nothing of graphguard's to test
        pytest.skip(f"inductor unavailable here: {type(err).__name__}")
    guard, got = guarded(lambda: _compiled_train("inductor"))
    assert same(plain, got)
    assert [(f.code, f.subject.name) for f in guard.findings] == [("GG902", "pred")]


# ---- DataLoader worker processes --------------------------------------------------------------
class _Shard(torch.utils.data.Dataset):
    """Makes its samples with torch ops; one sample even computes a (silly) loss whose target
    requires grad: in the parent, that is GG002; a worker's inherited guard must stay dormant."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(4, generator=g)
        w = torch.ones(4, requires_grad=True)
        F.mse_loss(w * 3, w * x)  # would be GG002 (error) in the guarded process
        return x, (x.sum() > 0).float().unsqueeze(0)


def _loader_train(workers: int):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(_Shard(), batch_size=8, num_workers=workers,
                                         timeout=120 if workers else 0)
    for epoch in range(2):
        for x, y in loader:
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return params(model)


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_dataloader_workers_are_not_watched():
    plain = _loader_train(0)
    in_process, _ = guarded(lambda: _loader_train(0))  # the dataset's misuse, seen in-process
    assert "GG002" in {c for c, _ in codes(in_process)}
    with GraphGuard(mode="raise") as guard:  # raise mode: a finding in a worker would kill it
        got = _loader_train(2)
    assert same(plain, got)
    assert codes(guard) == []
    assert guard.steps == 16


# ---- threads ----------------------------------------------------------------------------------
def test_another_threads_training_is_not_attributed_to_the_guard():
    """Function modes and saved-tensor hooks are per thread in PyTorch; the guard's global
    wrappers (backward, optimizer hooks) must follow: another thread's steps, backward calls and
    even its misuse belong to that thread, and both threads train as without the guard."""
    errors: list[BaseException] = []
    other_steps = []
    m = nn.Linear(4, 1)  # made here: the global RNG is shared by threads, the other one uses its own
    gen = torch.Generator().manual_seed(1)

    def other():
        try:
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            for step in range(200):
                loss = m(torch.randn(8, 4, generator=gen)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                other_steps.append(step)
            z = (m.weight ** 2).sum()
            z.backward()
            z.backward()  # misuse in the unguarded thread: PyTorch raises here, as without a guard
        except RuntimeError as err:
            errors.append(err)

    def train():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for step in range(50):
            loss = model(torch.randn(16, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return params(model)

    plain = train()
    with GraphGuard(mode="raise") as guard:
        t = threading.Thread(target=other)
        t.start()
        got = train()
        t.join(timeout=120)
    assert not t.is_alive()
    assert same(plain, got)
    assert codes(guard) == []
    assert (guard.steps, guard.backward_calls) == (50, 50)
    assert len(other_steps) == 200
    assert len(errors) == 1 and "second time" in str(errors[0])


def test_guard_in_a_worker_thread_watches_that_thread():
    """The guard entered in a thread other than the main one: it watches that thread (misuse
    there is found) while the main thread's own torch work goes on unwatched."""
    result: dict = {}

    def worker():
        try:
            with GraphGuard(mode="collect") as guard:
                w = torch.randn(3, requires_grad=True)
                opt = torch.optim.SGD([w], lr=0.1)
                ref = w * 2
                for step in range(2):
                    loss = ((w - ref) ** 2).sum()
                    opt.zero_grad()
                    try:
                        loss.backward()
                    except RuntimeError:
                        pass
                    opt.step()
            result["codes"] = codes(guard)
            result["steps"] = guard.steps
        except BaseException as err:  # pragma: no cover - reported below
            result["error"] = err

    t = threading.Thread(target=worker)
    t.start()
    m = nn.Linear(3, 1)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(100):  # the main thread trains meanwhile; none of it is the guard's
        opt.zero_grad()
        m(torch.ones(4, 3)).sum().backward()
        opt.step()
    t.join(timeout=120)
    assert "error" not in result, result.get("error")
    assert result["codes"] == [("GG001", "ref")]
    assert result["steps"] == 2
