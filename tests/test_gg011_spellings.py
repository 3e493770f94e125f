"""The unregistered-parameter family spelled where no name reaches the model: GG011 whatever holds it.

GG011 decides from how the live modules hold each untrained leaf (registered, a plain tensor
attribute, in a plain list of a module, by no module: capture/holding.py, read from the object
graph) and from a snapshot of the models taken when the optimizer was built (the module tree),
not from the names the training loop's frames give them; names only describe. Each row is one
family GG011 reports, and each holder keeps the model where no name search reaches it: a
closure's cell, an object with `__slots__`, a dict keyed by tuples. The program really leaves the
parameter untrained under plain PyTorch (asserted: its value after the steps is its value
before), and its clean twin (the same program written right) trains it and stays silent.

Asserts on codes, message ids and lines only, never on the sentences.
"""
from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from graphguard import GraphGuard
from lines import marker_lines

STEPS = 4

# family -> (Net's __init__ body, Net's forward body, make(): the model and its optimizer, the
#            probe: the tensor that should train (None: the layer is new at every call), the
#            message GG011 tells). `CLEAN` switches each to its correct spelling; the line
#            marked `# use` is where the untrained tensor enters the graph.
FAMILIES = {
    "layer-built-in-forward": (
        """\
        self.body = nn.Linear(4, 8)
        if CLEAN:
            self.head = nn.Linear(8, 1)
        """,
        """\
        h = torch.tanh(self.body(x))
        if CLEAN:
            return self.head(h)
        head = nn.Linear(8, 1)
        record(head.weight)
        return head(h)  # use
        """,
        """\
        model = Net()
        return model, torch.optim.SGD(model.parameters(), lr=0.1)
        """,
        "None",
        "GG011.built-anew"),
    "plain-tensor-attribute": (
        """\
        self.body = nn.Linear(4, 1)
        if CLEAN:
            self.scale = nn.Parameter(torch.full((1,), 2.0))
        else:
            self.scale = torch.full((1,), 2.0, requires_grad=True)
        """,
        """\
        return self.body(x) * self.scale  # use
        """,
        """\
        model = Net()
        return model, torch.optim.SGD(model.parameters(), lr=0.1)
        """,
        "model.scale",
        "GG011.plain-tensor-attribute"),
    "parameters-in-a-plain-list": (
        """\
        self.body = nn.Linear(4, 8)
        scales = [nn.Parameter(torch.full((8,), 2.0)) for _ in range(2)]
        self.scales = nn.ParameterList(scales) if CLEAN else scales
        self.out = nn.Linear(8, 1)
        """,
        """\
        h = self.body(x)
        for s in self.scales:
            h = h * s  # use
        return self.out(h)
        """,
        """\
        model = Net()
        return model, torch.optim.SGD(model.parameters(), lr=0.1)
        """,
        "model.scales[0]",
        "GG011.tensor-in-plain-container"),
    "layers-in-a-plain-list": (
        """\
        self.body = nn.Linear(4, 8)
        blocks = [nn.Linear(8, 8) for _ in range(2)]
        self.blocks = nn.ModuleList(blocks) if CLEAN else blocks
        self.out = nn.Linear(8, 1)
        """,
        """\
        h = self.body(x)
        for b in self.blocks:
            h = torch.tanh(b(h))  # use
        return self.out(h)
        """,
        """\
        model = Net()
        return model, torch.optim.SGD(model.parameters(), lr=0.1)
        """,
        "model.blocks[0].weight",
        "GG011.layer-in-plain-container"),
    "layer-added-after-the-optimizer": (
        """\
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 1)
        """,
        """\
        return self.head(torch.tanh(self.body(x)))  # use
        """,
        """\
        model = Net()
        if CLEAN:
            model.head = nn.Linear(8, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        if not CLEAN:
            model.head = nn.Linear(8, 1)  # a new head, after the optimizer
        return model, opt
        """,
        "model.head.weight",
        "GG011.added-after-optimizer"),
    "module-left-out-of-the-optimizer": (
        """\
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 1)
        """,
        """\
        return self.head(torch.tanh(self.body(x)))  # use
        """,
        """\
        model = Net()
        trained = model.parameters() if CLEAN else model.body.parameters()
        return model, torch.optim.SGD(trained, lr=0.1)
        """,
        "model.head.weight",
        "GG011.left-out"),
}

# holder -> how train() keeps what make() returned, and how the loss and the probe reach the
# model: the training loop holds the optimizer, never the model, so at the backward and the step
# no name in any frame reaches the model
HOLDERS = {
    # the model lives in the cells of two closures
    "closure": (
        """\
        def keep():
            model, opt = make()

            def loss_of(x, y):
                return run(model, x, y)

            def probe():
                return eval(PROBE, {"model": model})
            return loss_of, probe, opt
        loss_of, probe, opt = keep()
        """),
    # an object with __slots__: no instance dict to look into
    "slots": (
        """\
        box = Box()
        box.model, box.opt = make()

        opt = box.opt

        def loss_of(x, y):
            return run(box.model, x, y)

        def probe():
            return eval(PROBE, {"model": box.model})
        """),
    # a dict of models keyed by (index, role) tuples, held by a closure's cell
    "tuple-keyed-dict": (
        """\
        models = {}
        models[(0, "model")], models[(0, "opt")] = make()

        opt = models[(0, "opt")]

        def loss_of(x, y):
            return run(models[(0, "model")], x, y)

        def probe():
            return eval(PROBE, {"model": models[(0, "model")]})
        """),
}

_TEMPLATE = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

CLEAN = {clean}
PROBE = {probe!r}
RECORDED = [] if {record} else None  # (weight, its value when built): plain-torch check only


def record(w):
    if RECORDED is not None:
        RECORDED.append((w, w.detach().clone()))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
{init}
    def forward(self, x):
{forward}

class Box:
    __slots__ = ("model", "opt")


def make():
{make}

def run(model, x, y):
    return F.mse_loss(model(x), y)


def train(steps={steps}):
    torch.manual_seed(0)
{hold}
    before = None if PROBE == "None" else probe().detach().clone()
    for _ in range(steps):
        x = torch.randn(16, 4)
        loss = loss_of(x, x.sum(1, keepdim=True))
        opt.zero_grad()
        loss.backward()  # (no frame on the stack holds the model here)
        opt.step()
    return before, (None if PROBE == "None" else probe().detach().clone())
'''


def _load(tmp_path: Path, family: str, holder: str, clean: bool = False, record: bool = False):
    init, forward, make, probe, _ = FAMILIES[family]
    src = _TEMPLATE.format(clean=clean, probe=probe, record=record, steps=STEPS,
                           init=textwrap.indent(textwrap.dedent(init), " " * 8),
                           forward=textwrap.indent(textwrap.dedent(forward), " " * 8),
                           make=textwrap.indent(textwrap.dedent(make), " " * 4),
                           hold=textwrap.indent(textwrap.dedent(HOLDERS[holder]), " " * 4))
    stem = f"gg011_{family}_{holder}_{'clean' if clean else 'buggy'}".replace("-", "_")
    path = tmp_path / f"{stem}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[stem] = mod
    spec.loader.exec_module(mod)
    return mod, path


CASES = [(f, h) for f in sorted(FAMILIES) for h in sorted(HOLDERS)]


@pytest.mark.parametrize("family,holder", CASES)
def test_plain_torch_leaves_it_untrained(tmp_path: Path, family: str, holder: str) -> None:
    mod, _ = _load(tmp_path, family, holder, record=True)
    before, after = mod.train()
    if before is None:  # a layer built at every call: each one's weights stay as built
        assert len(mod.RECORDED) == STEPS
        assert all(torch.equal(w, made) and w.grad is not None for w, made in mod.RECORDED)
    else:
        assert torch.equal(before, after)
    clean, _ = _load(tmp_path, family, holder, clean=True)
    before, after = clean.train()
    assert before is None or not torch.equal(before, after)  # the clean twin trains it


@pytest.mark.parametrize("family,holder", CASES)
def test_every_spelling_is_gg011(tmp_path: Path, family: str, holder: str) -> None:
    mod, path = _load(tmp_path, family, holder)
    with GraphGuard(mode="collect") as guard:
        mod.train()
    found = [(f.message_id, f.location.line) for f in guard.findings if f.code == "GG011"]
    assert found == [(FAMILIES[family][4], marker_lines(path)("use"))], \
        [(f.code, f.message_id, f.subject.name) for f in guard.findings]
    f = next(f for f in guard.findings if f.code == "GG011")
    assert Path(f.location.file).resolve() == path.resolve()


@pytest.mark.parametrize("family,holder", CASES)
def test_the_clean_twin_is_silent(tmp_path: Path, family: str, holder: str) -> None:
    mod, _ = _load(tmp_path, family, holder, clean=True)
    with GraphGuard(mode="collect") as guard:
        mod.train()
    assert [(f.code, f.message_id) for f in guard.findings if f.severity != "info"] == []
