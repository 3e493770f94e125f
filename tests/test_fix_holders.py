"""`graphguard fix` on what holds modules, losses and cached values: modules put into a plain list
or dict filled after it is made (GG011; families/containers.py), a kept loss the iteration
backwards through its holder (GG101; families/after_backward.py), and a value that comes back from
a transform's or a function's cache with an earlier iteration's freed graph (GG001/GG003;
families/cached.py). Each program is another spelling than the benchmark case that motivated the
family; each has a clean twin that must get no patch.

Headers: `# fix: CODE family line [steps=N]` (tests/fixkit.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fixkit import check_annotated, run_fix, write_program
from graphguard.fix.verify import Result, judge

pytestmark = pytest.mark.slow  # every case runs its program several times in subprocesses

PROGRAMS = {
    # (layer, norm) pairs made by a comprehension in the container's own line
    "comprehension_pairs": """\
        # fix: GG011 nested-modulelist 9
        import torch
        from torch import nn


        class Tower(nn.Module):
            def __init__(self, width, depth):
                super().__init__()
                self.levels = [[nn.Linear(width, width), nn.LayerNorm(width)] for _ in range(depth)]
                self.out = nn.Linear(width, 1)

            def forward(self, x):
                for layer, norm in self.levels:
                    x = torch.relu(norm(layer(x)))
                return self.out(x)


        torch.manual_seed(0)
        net = Tower(5, 2)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for _ in range(4):
            loss = net(torch.randn(7, 5)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # (layer, activation) tuples put into a list by an extend: each pair is a ModuleList too
    "extended_pairs": """\
        # fix: GG011 nested-modulelist 11
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class Stack(nn.Module):
            def __init__(self, sizes):
                super().__init__()
                self.stages = []
                for a, b in zip(sizes, sizes[1:]):
                    self.stages.extend([(nn.Linear(a, b), nn.Sigmoid())])
                self.head = nn.Linear(sizes[-1], 3)

            def forward(self, x):
                for lin, act in self.stages:
                    x = act(lin(x))
                return self.head(x)


        model = Stack([6, 4, 4])
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        data, target = torch.randn(10, 6), torch.rand(10, 3)
        for _ in range(4):
            opt.zero_grad()
            loss = ((model(data) - target) ** 2).mean()
            loss.backward()
            opt.step()
        """,
    # a dict of small branches filled by key, each branch a list of layers: a ModuleDict of ModuleLists
    "keyed_branches": """\
        # fix: GG011 nested-moduledict 12
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class MultiHead(nn.Module):
            def __init__(self, tasks):
                super().__init__()
                self.trunk = nn.Linear(4, 8)
                self.branches = {}
                for task in tasks:
                    self.branches[task] = [nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1)]

            def forward(self, x):
                h = torch.tanh(self.trunk(x))
                total = 0
                for layers in self.branches.values():
                    y = h
                    for layer in layers:
                        y = layer(y)
                    total = total + y
                return total


        model = MultiHead(["a", "b"])
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(4):
            loss = model(torch.randn(6, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # the history of losses is what the loop backwards, through its last element
    "history_backward": """\
        # fix: GG101 detach-after-backward 16 steps=6
        import torch
        import torch.nn.functional as F

        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(8, 3), torch.randn(8, 2)
        history = []
        step = 0
        while step < 20:
            opt.zero_grad()
            history.append(F.mse_loss(model(x), y))
            if len(history) > 2 and abs(float(history[-2] - history[-1])) < 1e-12:
                break
            history[-1].backward()
            opt.step()
            step += 1
        """,
    # a sigmoid transform with a cache, fed the same parameter object (stepped in place) each time
    "cached_transform": """\
        # fix: GG001 uncache-transform 10
        import torch
        from torch.distributions.transforms import SigmoidTransform


        class Gate(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.raw = torch.nn.Parameter(torch.zeros(3))
                self.squash = SigmoidTransform(cache_size=1)

            def forward(self, x):
                weights = self.squash(self.raw)
                return x * weights


        torch.manual_seed(0)
        gate = Gate()
        opt = torch.optim.SGD(gate.parameters(), lr=0.1)
        for _ in range(4):
            loss = (gate(torch.randn(5, 3)) - 1.0).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # a function memoized with lru_cache, called on the same parameter object every iteration
    "cached_function": """\
        # fix: GG001 uncache-function 11
        import functools

        import torch

        torch.manual_seed(0)
        log_sigma = torch.zeros(4, requires_grad=True)


        @functools.lru_cache(maxsize=None)
        def precision(p):
            return torch.exp(-2 * p)


        opt = torch.optim.Adam([log_sigma], lr=0.05)
        for _ in range(4):
            err = torch.randn(16, 4)
            weight = precision(log_sigma)
            loss = (err.pow(2) * weight).mean() + log_sigma.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # an affine pair of parameters made in forward: both move to __init__ in one patch
    "affine_in_forward": """\
        # fix: GG011 layers-to-init 16
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class Affine(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.dim = dim
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                self.gain = nn.Parameter(torch.ones(self.dim))
                self.bias_term = nn.Parameter(torch.zeros(self.dim))
                return self.proj(x) * self.gain + self.bias_term


        net = nn.Sequential(Affine(4), nn.Tanh(), nn.Linear(4, 1))
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for _ in range(4):
            loss = net(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # parameter groups over two submodules of one model, none for a third one's part: the group
    # is spelled through the attribute that holds an instance of the subject's class
    "group_through_holder": """\
        # fix: GG011 add-param-group 28
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class Tower(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(6, 6)
                self.tail = nn.Linear(6, 6)


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.left = nn.Linear(6, 6)
                self.right = Tower()

            def forward(self, x):
                return self.right.tail(self.right.body(self.left(x)))


        class Runner:
            def __init__(self):
                self.net = Net()
                self.opt = torch.optim.SGD([
                    {"params": self.net.left.parameters(), "lr": 0.1},
                    {"params": self.net.right.body.parameters(), "lr": 0.05},
                ], lr=0.1)

            def step(self, x):
                self.opt.zero_grad()
                loss = self.net(x).pow(2).mean()
                loss.backward()
                self.opt.step()


        runner = Runner()
        for _ in range(4):
            runner.step(torch.randn(5, 6))
        """,
}

CLEAN = {
    # the same tower, its blocks in an nn.ModuleList from the start
    "registered_blocks": """\
        import torch
        from torch import nn


        class Tower(nn.Module):
            def __init__(self, width, depth):
                super().__init__()
                self.blocks = nn.ModuleList()
                for _ in range(depth):
                    self.blocks.append(nn.Linear(width, width))

            def forward(self, x):
                for block in self.blocks:
                    x = torch.relu(block(x))
                return x.sum(1)


        torch.manual_seed(0)
        net = Tower(5, 2)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for _ in range(4):
            loss = net(torch.randn(7, 5)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # the history keeps detached values; the backward is on the loss itself
    "detached_history": """\
        import torch
        import torch.nn.functional as F

        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(8, 3), torch.randn(8, 2)
        history = []
        for step in range(8):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            history.append(loss.detach())
            loss.backward()
            opt.step()
        """,
    # a cached transform fed a new tensor each time: the cache never answers
    "fresh_input_transform": """\
        import torch
        from torch.distributions.transforms import SigmoidTransform

        torch.manual_seed(0)
        raw = torch.zeros(3, requires_grad=True)
        squash = SigmoidTransform(cache_size=1)
        opt = torch.optim.SGD([raw], lr=0.1)
        for _ in range(4):
            weights = squash(raw * 1.0)
            loss = (torch.randn(5, 3) * weights - 1.0).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # nested lists of layers already registered (ModuleList of ModuleLists)
    "nested_registered": """\
        import torch
        from torch import nn


        class Tower(nn.Module):
            def __init__(self, width, depth):
                super().__init__()
                self.levels = nn.ModuleList(nn.ModuleList([nn.Linear(width, width), nn.LayerNorm(width)])
                                            for _ in range(depth))

            def forward(self, x):
                for layer, norm in self.levels:
                    x = torch.relu(norm(layer(x)))
                return x.sum(1)


        torch.manual_seed(0)
        net = Tower(5, 2)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for _ in range(4):
            loss = net(torch.randn(7, 5)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # a memoized constant (a causal mask by size): the cache is right, nothing trains through it
    "cached_constant": """\
        import functools

        import torch

        torch.manual_seed(0)


        @functools.lru_cache(maxsize=None)
        def causal(n):
            return torch.tril(torch.ones(n, n))


        proj = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(proj.parameters(), lr=0.05)
        for _ in range(4):
            h = proj(torch.randn(6, 4))
            mixed = causal(6) @ h
            loss = mixed.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # the affine pair built once in __init__, and every submodule in a parameter group
    "params_in_init_all_groups": """\
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class Affine(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.proj = nn.Linear(dim, dim)
                self.gain = nn.Parameter(torch.ones(dim))
                self.bias_term = nn.Parameter(torch.zeros(dim))

            def forward(self, x):
                return self.proj(x) * self.gain + self.bias_term


        net = nn.Sequential(Affine(4), nn.Tanh(), nn.Linear(4, 1))
        opt = torch.optim.SGD([{"params": net[0].parameters(), "lr": 0.05},
                               {"params": net[2].parameters()}], lr=0.1)
        for _ in range(4):
            loss = net(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_patch_kept(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_annotated(tmp_path, monkeypatch, PROGRAMS[name])


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_clean_twin_gets_no_patch(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_program(tmp_path, CLEAN[name])
    before = path.read_text()
    rc, doc = run_fix(tmp_path, monkeypatch, steps=6)
    assert rc == 0
    assert doc["findings"] == [] and doc["patches"] == []
    assert path.read_text() == before


def _gg009() -> dict:
    where = {"file": "train.py", "line": 9, "function": "<module>", "code": ""}
    return {"code": "GG009", "severity": "error", "location": where, "related": [],
            "subject": {"name": "loss", "kind": "tensor", "summary": "f32[] requires_grad", "created_at": where}}


def _ran(params: dict) -> Result:
    return Result(True, [], {"status": "ok"}, {"steps": 3, "params": params})


def test_judge_gg009_counts_a_computed_zero_gradient_as_reached() -> None:
    # before: the loss was a leaf re-wrap, no parameter had a gradient
    base = _ran({"opt0.group0.param0": {"shape": [3, 8], "nonzero": False, "steps_with_grad": 0},
                 "opt0.group0.param1": {"shape": [32, 8], "nonzero": False, "steps_with_grad": 0}})
    moved = {"shape": [3, 8], "nonzero": True, "steps_with_grad": 3}
    # a term multiplied by 0 on every batch: its gradient is computed, and exactly zero
    zero = {"shape": [32, 8], "nonzero": False, "steps_with_grad": 3}
    assert judge(_gg009(), base, _ran({"opt0.group0.param0": moved, "opt0.group0.param1": zero})) is None
    # still cut (no gradient at all) for one of them: rejected
    cut = dict(zero, steps_with_grad=0)
    assert judge(_gg009(), base, _ran({"opt0.group0.param0": moved, "opt0.group0.param1": cut})) is not None
    # only zeros everywhere (a hard rounding kept on the path): the loss trains nothing, rejected
    assert judge(_gg009(), base, _ran({"opt0.group0.param0": dict(moved, nonzero=False),
                                       "opt0.group0.param1": zero})) is not None
    # the relaxation is GG009's only: GG008 still needs a non-zero gradient on what it names
    gg008 = dict(_gg009(), code="GG008")
    gg008["subject"] = dict(gg008["subject"], name="model.reg.weight", summary="f32[32, 8] requires_grad")
    assert judge(gg008, base,
                 _ran({"opt0.group0.param0": moved, "opt0.group0.param1": zero})) is not None
