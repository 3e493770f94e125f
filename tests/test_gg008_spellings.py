"""GG008 whatever holds the model: the same parameter left without gradient, the model held five ways.

GG008 decides from the optimizer's parameters, their gradients, the recorded cuts and the module
tree read from the collector (capture/modtree.py: which module registers each parameter and each
module), not from the names the training loop's frames give them; a name is only the
description. Each row holds the model somewhere else: a local, a slotted helper object, a dict
keyed by int, a list, a closure's cell (where no name search reaches). Each bug is one family:
a head the forward never calls, a layer whose output is detached, a parameter its module's
forward reads through `.data`. Plain PyTorch really leaves the parameter untrained (asserted: its
value is unchanged after the steps), and the clean twin of each bug stays silent.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from casekit import load_case
from graphguard import GraphGuard
from lines import marker_lines

STEPS = 4

# how the model is held: (module-level helpers, the line that makes it, the expression the loop uses)
HOLDERS = {
    "local": ("", "net = Net()", "net"),
    "slotted": ("class Box:\n    __slots__ = ('model',)\n\n    def __init__(self, m):\n        self.model = m\n",
                "box = Box(Net())", "box.model"),
    "int-dict": ("", "nets = {0: Net()}", "nets[0]"),
    "list": ("", "nets = [Net()]", "nets[0]"),
    # the model lives only in a closure's cell: the loop holds a function, no frame names the model
    "closure": ("def make():\n    m = Net()\n\n    def get():\n        return m\n    return get\n",
                "get = make()", "get()"),
}

# the bug: (Net's layers, its forward's body, the clean forward's body, the message, the parameter
# that never trains as an attribute path of Net)
BUGS = {
    "never-called": ("self.body = nn.Linear(4, 8)\n        self.out = nn.Linear(8, 1)\n"
                     "        self.aux = nn.Linear(8, 1)  # made",
                     "return self.out(torch.tanh(self.body(x)))",
                     "h = torch.tanh(self.body(x))\n        return self.out(h) + 0.1 * self.aux(h)",
                     "never-called", "aux.weight"),
    "cut-by-op": ("self.body = nn.Linear(4, 8)  # made\n        self.out = nn.Linear(8, 1)",
                  "h = torch.tanh(self.body(x)).detach()  # cut\n        return self.out(h)",
                  "h = torch.tanh(self.body(x))\n        return self.out(h)",
                  "cut-by-op", "body.weight"),
    "unused-in-module": ("self.scale = nn.Parameter(torch.ones(1))  # made\n"
                         "        self.body = nn.Linear(4, 1)",
                         "return self.body(x) * self.scale.data",
                         "return self.body(x) * self.scale",
                         "unused-in-module", "scale"),
}

_TEMPLATE = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        {layers}

    def forward(self, x):
        {forward}

{helpers}

def train(steps={steps}):
    torch.manual_seed(0)
    {make}
    model_ref = lambda: {use}
    opt = torch.optim.SGD(model_ref().parameters(), lr=0.05)
    for step in range(steps):
        x = torch.randn(16, 4)
        loss = F.mse_loss(model_ref()(x), x.sum(1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()  # step
    return model_ref()
'''


def _load(tmp_path: Path, holder: str, bug: str, clean: bool = False):
    helpers, make, use = HOLDERS[holder]
    layers, forward, clean_forward, _, _ = BUGS[bug]
    src = _TEMPLATE.format(layers=layers, forward=clean_forward if clean else forward,
                           helpers=helpers, steps=STEPS, make=make, use=use)
    path = tmp_path / f"gg008_{holder.replace('-', '_')}_{bug.replace('-', '_')}{'_clean' if clean else ''}.py"
    path.write_text(textwrap.dedent(src))
    return load_case(path), path


def _param(model: torch.nn.Module, path: str) -> torch.Tensor:
    return model.get_parameter(path)


@pytest.mark.parametrize("bug", sorted(BUGS))
@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_plain_pytorch_leaves_it_untrained(tmp_path, holder, bug):
    mod, _ = _load(tmp_path, holder, bug)
    torch.manual_seed(0)
    before = _param(mod.Net(), BUGS[bug][4]).detach().clone()
    model = mod.train()
    assert torch.equal(_param(model, BUGS[bug][4]).detach(), before)
    assert _param(model, BUGS[bug][4]).grad is None


@pytest.mark.parametrize("bug", sorted(BUGS))
@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_gg008_whatever_holds_the_model(tmp_path, holder, bug):
    mod, path = _load(tmp_path, holder, bug)
    lines = marker_lines(path)
    with GraphGuard(mode="collect") as g:
        mod.train()
    found = [f for f in g.findings if f.code == "GG008"]
    assert [f.message_id for f in found] == [f"GG008.{BUGS[bug][3]}"], [str(f) for f in g.findings]
    f = found[0]
    assert f.location.line == lines("step")
    # the parameter (or its layer) is dated by the line that built it, named or not
    assert f.subject.created_at is not None and f.subject.created_at.line == lines("made")
    if bug == "cut-by-op":
        assert any(r.location and r.location.line == lines("cut") for r in f.related)


@pytest.mark.parametrize("bug", sorted(BUGS))
@pytest.mark.parametrize("holder", ["local", "closure"])
def test_clean_twin_is_silent(tmp_path, holder, bug):
    mod, _ = _load(tmp_path, holder, bug, clean=True)
    with GraphGuard(mode="collect") as g:
        model = mod.train()
    assert [f for f in g.findings if f.code == "GG008"] == []
    assert _param(model, BUGS[bug][4]).grad is not None
