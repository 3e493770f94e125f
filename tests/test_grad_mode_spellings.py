"""The grad-mode family spelled many ways: the same code, subject and lines whatever the spelling.

GG014 decides from the switch the run saw turn autograd off (capture/gradmode.py), not from how
the source spells it. Each row is one spelling of "part of the model computed with autograd off"
(a dual encoder whose query tower runs under no_grad while the loss trains the document tower),
or of "the loss computed with autograd off" (backward in a validation loop). The buggy program
really misbehaves under plain PyTorch (asserted), and its clean twin, the same switch around code
that trains nothing, stays silent.
"""
from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from graphguard import GraphGuard

# Each spelling: (module-level helpers, the line(s) that open the region, indented body prefix).
# `{body}` is the query tower's forward; the marker `# region` is on the line the fix goes to.
_HALF = {
    "with-literal": ("", "with torch.no_grad():  # region"),
    "with-from-import": ("from torch import no_grad as frozen\n", "with frozen():  # region"),
    "with-full-path": ("", "with torch.autograd.grad_mode.no_grad():  # region"),
    "conditional": ("import contextlib\nFREEZE = True\n",
                    "with (torch.no_grad() if FREEZE else contextlib.nullcontext()):  # region"),
    "aliased": ("", "nograd = torch.no_grad()\n        with nograd:  # region"),
    "project-helper": ("import contextlib\n\ndef maybe_no_grad(flag):\n"
                       "    return torch.no_grad() if flag else contextlib.nullcontext()\n",
                       "with maybe_no_grad(True):  # region"),
    "exit-stack": ("import contextlib\n",
                   "with contextlib.ExitStack() as stack:\n"
                   "            stack.enter_context(torch.no_grad())  # region"),
    "set-grad-enabled": ("", "with torch.set_grad_enabled(False):  # region"),
    "set-grad-enabled-flag": ("TRAIN_QUERY = False\n", "with torch.set_grad_enabled(TRAIN_QUERY):  # region"),
}

_DECORATED = {
    "decorator-call": ("", "@torch.no_grad()  # region"),
    "decorator-bare": ("", "@torch.no_grad  # region"),
    "decorator-under-another": (
        "import functools\n\ndef logged(fn):\n    @functools.wraps(fn)\n"
        "    def inner(*a, **k):\n        return fn(*a, **k)\n    return inner\n",
        "@logged\n    @torch.no_grad()  # region"),
    "decorator-alias": ("frozen = torch.no_grad()\n", "@frozen  # region"),
}

_TEMPLATE = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
{helpers}

class DualEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_hidden = nn.Linear(6, 12)
        self.q_out = nn.Linear(12, 8)
        self.d_tower = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 8))

{encode}

    def forward(self, q, d):
        return self.encode_query(q), self.d_tower(d)


def train(steps=3):
    torch.manual_seed(0)
    model = DualEncoder()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        q, d = torch.randn(5, 6), torch.randn(5, 6)
        zq, zd = model(q, d)
        logits = F.normalize(zq, dim=1) @ F.normalize(zd, dim=1).t() / 0.1
        loss = F.cross_entropy(logits, torch.arange(5))
        opt.zero_grad()
        loss.backward()
        opt.step()  # step
    return model
'''

_WITH_ENCODE = '''\
    def encode_query(self, q):
        {region}
            h = torch.relu(self.q_hidden(q))
            out = self.q_out(h)
        return out'''

_DECORATED_ENCODE = '''\
    {region}
    def encode_query(self, q):
        h = torch.relu(self.q_hidden(q))
        return self.q_out(h)'''


def _write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"spelling_{name.replace('-', '_')}.py"
    path.write_text(source)
    return path


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _line(path: Path, marker: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if marker in text)


def _half_program(tmp_path: Path, name: str) -> Path:
    if name in _HALF:
        helpers, region = _HALF[name]
        encode = _WITH_ENCODE.format(region=region)
    else:
        helpers, region = _DECORATED[name]
        encode = _DECORATED_ENCODE.format(region=region)
    return _write(tmp_path, name, _TEMPLATE.format(helpers=helpers, encode=encode))


@pytest.mark.parametrize("name", list(_HALF) + list(_DECORATED))
def test_part_of_the_model_under_autograd_off(tmp_path: Path, name: str) -> None:
    path = _half_program(tmp_path, name)
    mod = _load(path)
    plain = mod.train()  # plain PyTorch: runs, and the query tower never learns
    assert plain.q_out.weight.grad is None and plain.d_tower[0].weight.grad is not None
    guard = GraphGuard(mode="collect")
    with guard:
        mod.train()
    got = [(f.code, f.subject.name, f.location.line) for f in guard.findings]
    assert got == [("GG014", "model.q_out", _line(path, "# step"))], got
    fix_at = [r.location.line for r in guard.findings[0].related if r.role == "fix-at"]
    assert fix_at == [_line(path, "# region")]


_LOSS_TEMPLATE = '''\
import torch
import torch.nn as nn
{helpers}

def validate(model, batches):
    for x, y in batches:
        {region}
            pred = model(x)
            loss = nn.functional.mse_loss(pred, y)
        loss.backward()  # bites


def run():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    validate(model, [(torch.randn(8, 4), torch.randn(8, 1))])
'''


@pytest.mark.parametrize("name", list(_HALF))
def test_loss_computed_with_autograd_off(tmp_path: Path, name: str) -> None:
    helpers, region = _HALF[name]
    source = _LOSS_TEMPLATE.format(helpers=helpers, region=region)
    path = _write(tmp_path, "loss_" + name, source)
    mod = _load(path)
    with pytest.raises(RuntimeError, match="does not require grad"):
        mod.run()  # plain PyTorch's error, with no name and no line
    guard = GraphGuard(mode="collect")
    try:
        with guard:
            mod.run()
    except RuntimeError:
        pass
    got = [(f.code, f.subject.name, f.location.line) for f in guard.findings]
    # GG009 also speaks (the loss has no history): GG014 names the region that made it so
    assert ("GG014", "loss", _line(path, "# bites")) in got, got
    gg014 = next(f for f in guard.findings if f.code == "GG014")
    fix_at = [r.location.line for r in gg014.related if r.role == "fix-at"]
    assert fix_at == [_line(path, "# region")]


@pytest.mark.parametrize("name", ["conditional", "project-helper", "aliased", "decorator-under-another"])
def test_same_switch_around_code_that_trains_nothing_is_silent(tmp_path: Path, name: str) -> None:
    """The clean twin: the region computes a frozen tower (requires_grad off, not optimized)."""
    path = _half_program(tmp_path, name)
    source = path.read_text().replace(
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)",
        "    model.q_hidden.requires_grad_(False)\n    model.q_out.requires_grad_(False)\n"
        "    opt = torch.optim.SGD(model.d_tower.parameters(), lr=0.1)")
    path.write_text(source)
    mod = _load(path)
    guard = GraphGuard(mode="collect")
    with guard:
        mod.train()
    assert [f.code for f in guard.findings] == []


def test_the_switch_stack_is_per_thread_and_left_clean() -> None:
    """A no_grad block entered in another thread (which the guard does not follow) leaves the
    main thread's switch alone, and every entry is gone once its blocks have exited."""
    import threading

    guard = GraphGuard(mode="collect")
    seen = []
    with guard:
        switches = guard.rec.grad_switches

        def other() -> None:
            with torch.no_grad():
                seen.append(switches.current())

        with torch.no_grad():
            t = threading.Thread(target=other)
            t.start()
            t.join()
            mine = switches.current()
        after = switches.current()
    assert seen[0] is None or seen[0].line != mine.line
    assert mine is not None and mine.kind == "with" and mine.api == "no_grad" and mine.user
    assert after is None
