"""The graph-leak family spelled many ways: GG101 whatever holds the graphs.

GG101 decides from the live tensors that still have a grad_fn and the iterations their graphs were
made in (found through the collector, capture/kept.py), and from what refers to them (a list, a
deque, a keyed dict), not from the names the training loop's frames give them; the name is only
the description. Each row is one way of keeping every iteration's loss with its graph. The program
really keeps those graphs under plain PyTorch (asserted: every iteration's loss node is still
alive), and its clean twin, the same holder given `.item()` or `.detach()`, stays silent.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from casekit import load_case
from graphguard import GraphGuard
from lines import marker_lines

STEPS = 8

# (module-level helpers, set-up lines, the keeping line (marked `# keep`), what train() returns,
#  the name the report should give the holder; None: no name reaches it)
SPELLINGS = {
    "running-sum": ("", "total = 0", "total += loss  # keep", "total", "total"),
    "spelled-out-sum": ("", "total = 0", "total = total + loss  # keep", "total", "total"),
    "concatenated-history": ("", "hist = torch.zeros(0)", "hist = torch.cat([hist, loss.reshape(1)])  # keep",
                             "hist", "hist"),
    "list": ("", "losses = []", "losses.append(loss)  # keep", "losses", "losses"),
    "deque": ("", "window = collections.deque(maxlen=50)", "window.append(loss)  # keep", "window", "window"),
    "records": ("", "records = []", "records.append((loss, step))  # keep", "records", "records"),
    "dict-by-step": ("", "by_step = {}", "by_step[step] = loss  # keep", "by_step", "by_step"),
    "namespace-object": ("REG = types.SimpleNamespace(items=[])\n", "", "REG.items.append(loss)  # keep",
                         "REG.items", "REG.items"),
    # a list only a closure's cell holds: no name in any frame reaches it
    "closure": ("def make_logger():\n    kept = []\n\n    def log(value):\n        kept.append(value)\n"
                "    return log\n", "log = make_logger()", "log(loss)  # keep",
                "log.__closure__[0].cell_contents", None),
}

_TEMPLATE = '''\
import collections
import types

import torch
import torch.nn as nn
import torch.nn.functional as F
{helpers}

def train(steps={steps}, keep=lambda loss: loss):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    {setup}
    for step in range(steps):
        x = torch.randn(16, 4)
        loss = F.mse_loss(model(x), x.sum(1, keepdim=True))  # loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss = keep(loss)
        {keeping}
    return {returns}
'''


def _load(tmp_path: Path, name: str):
    helpers, setup, keeping, returns, _ = SPELLINGS[name]
    src = _TEMPLATE.format(helpers=helpers, steps=STEPS, setup=setup or "pass", keeping=keeping,
                           returns=returns)
    path = tmp_path / f"leak_{name.replace('-', '_')}.py"
    path.write_text(textwrap.dedent(src))
    return load_case(path), path


def _tensors(kept) -> list[torch.Tensor]:
    """The tensors a holder keeps: itself, its elements, one level into its records."""
    if isinstance(kept, torch.Tensor):
        return [kept]
    if isinstance(kept, dict):
        kept = list(kept.values())
    if isinstance(kept, (list, tuple)) or hasattr(kept, "maxlen"):
        return [t for item in kept for t in _tensors(item)]
    return []


def _loss_graphs_alive(kept) -> int:
    """How many iterations' loss nodes the kept value still reaches (plain PyTorch)."""
    roots = [t.grad_fn for t in _tensors(kept)]
    seen, queue, found = set(), [r for r in roots if r is not None], 0
    while queue:
        node = queue.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        found += node.name() == "MseLossBackward0"
        queue.extend(n for n, _ in node.next_functions if n is not None)
    return found


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_keeps_graphs_under_plain_torch(tmp_path: Path, name: str) -> None:
    mod, _ = _load(tmp_path, name)
    assert _loss_graphs_alive(mod.train()) == STEPS


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_is_gg101(tmp_path: Path, name: str) -> None:
    mod, path = _load(tmp_path, name)
    with GraphGuard(mode="collect") as guard:
        mod.train()
    found = [f for f in guard.findings if f.code == "GG101"]
    assert len(found) == 1, [(f.code, f.subject.name) for f in guard.findings]
    (f,) = found
    expected = SPELLINGS[name][4]
    at = marker_lines(path)
    assert f.subject.name == expected
    assert Path(f.location.file).resolve() == path.resolve()
    # named: the keeping line; unnamed: where the newest kept value was made
    assert f.location.line == (at("keep") if expected else at("loss"))
    assert not [x for x in guard.findings if x.severity != "info" and x.code != "GG101"]


@pytest.mark.parametrize("how", ["item", "detach"])
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_clean_twin_is_silent(tmp_path: Path, name: str, how: str) -> None:
    mod, _ = _load(tmp_path, name)
    if how == "item" and name == "concatenated-history":
        pytest.skip("torch.cat takes tensors, not numbers")
    with GraphGuard(mode="collect") as guard:
        kept = mod.train(keep=lambda loss: getattr(loss, how)())
    assert _loss_graphs_alive(kept) == 0
    assert [(f.code, f.subject.name) for f in guard.findings if f.severity != "info"] == []
