"""`graphguard fix` without running anything: the candidate texts of the families (formatting and
comments kept, the edit where the finding's data says) and how the benchmark scores a fix result.
Findings are written as `graphguard run --json` writes them, with only the fields the fixer reads."""
from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from typing import Any

from graphguard.fix.candidates import RANK, candidates_for


def _loc(line: int) -> dict[str, Any]:
    return {"file": "train.py", "line": line}


def _finding(code: str, name: str | None, line: int, created: int | None = None,
             **roles: list[int]) -> dict[str, Any]:
    return {"code": code, "severity": "error", "location": _loc(line),
            "subject": {"name": name, "created_at": _loc(created) if created else None},
            "related": [{"role": role.replace("_", "-"), "location": _loc(n)} for role, ns in roles.items() for n in ns]}


def _texts(source: str, finding: dict[str, Any]) -> dict[str, list[str]]:
    text = textwrap.dedent(source)
    out: dict[str, list[str]] = {}
    for c in candidates_for(finding, lambda f: text if f == "train.py" else None):
        out.setdefault(c.family, []).append(c.text)
    return out


TWO_HEADS = """\
    import torch
    enc = torch.nn.Linear(4, 4)
    for step in range(3):
        z = torch.tanh(enc(torch.randn(8, 4)))
        loss_a = z.pow(2).mean()
        loss_a.backward()  # first
        z.abs().mean().backward()
    """


def test_double_backward_candidates() -> None:
    fams = _texts(TWO_HEADS, _finding("GG003", "z", 7, created=4, consumed_by=[6]))
    assert fams["sum-losses"] == [textwrap.dedent(TWO_HEADS).replace(
        "    loss_a.backward()  # first\n    z.abs().mean().backward()\n",
        "    (loss_a + z.abs().mean()).backward()  # first\n")]
    assert any("loss_a.backward(retain_graph=True)  # first" in t for t in fams["retain-graph"])
    assert any("loss_a = z.detach().pow(2).mean()" in t for t in fams["detach-shared-input"])
    assert RANK["sum-losses"] < 0 < RANK["retain-graph"]


def test_non_leaf_and_non_scalar_candidates() -> None:
    src = """\
        import torch
        w = torch.randn(3, requires_grad=True).double()
        crit = torch.nn.MSELoss(reduction="none")
        loss = crit(w, w * 2)
        loss.backward()
        """
    fams = _texts(src, _finding("GG007", "w", 5, created=2, made_non_leaf=[2]))
    assert fams["requires-grad-last"][0].splitlines()[1] == "w = torch.randn(3).double().requires_grad_()"
    assert fams["new-leaf"][0].splitlines()[1] == "w = torch.randn(3, requires_grad=True).double().detach().requires_grad_()"
    assert fams["wrap-parameter"][0].splitlines()[1] == "w = torch.nn.Parameter(torch.randn(3, requires_grad=True).double())"
    fams = _texts(src, _finding("GG012", "loss", 5, created=4))
    assert fams["mean-at-backward"][0].splitlines()[4] == "loss.mean().backward()"
    assert fams["mean-at-creation"][0].splitlines()[3] == "loss = crit(w, w * 2).mean()"
    assert fams["mean-reduction"][0].splitlines()[2] == "crit = torch.nn.MSELoss()"


def test_layer_moved_to_init_keeps_its_comment() -> None:
    src = """\
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(4, 8)

            def forward(self, x):
                x = self.body(x)
                # the head
                self.head = nn.Linear(8, 2)
                return self.head(x)
        """
    fams = _texts(src, _finding("GG011", "model.head", 11))
    assert fams["layer-to-init"][0].splitlines()[3:11] == [
        "        super().__init__()", "        self.body = nn.Linear(4, 8)", "        # the head",
        "        self.head = nn.Linear(8, 2)", "", "    def forward(self, x):", "        x = self.body(x)",
        "        return self.head(x)"]
    # a layer whose size depends on the call's input stays where it is
    assert "layer-to-init" not in _texts(src.replace("nn.Linear(8, 2)", "nn.Linear(x.shape[1], 2)"),
                                         _finding("GG011", "model.head", 11))


def test_no_grad_block_unwrapped_and_rewrap_dropped() -> None:
    src = """\
        import torch
        lin = torch.nn.Linear(3, 1)
        with torch.no_grad():
            pred = lin(torch.randn(8, 3))
        loss = pred.pow(2).mean()
        loss.requires_grad = True
        loss.backward()
        """
    fams = _texts(src, _finding("GG009", "loss", 7, created=5, fix_at=[6]))
    assert textwrap.dedent("""\
        import torch
        lin = torch.nn.Linear(3, 1)
        pred = lin(torch.randn(8, 3))
        loss = pred.pow(2).mean()
        loss.backward()
        """) in fams["enable-grad"]


def _accuracy() -> Any:
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "accuracy.py"
    spec = importlib.util.spec_from_file_location("gg_accuracy", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gg_accuracy"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_benchmark_scores_a_fix_result() -> None:
    acc = _accuracy()
    finding = {"code": "GG003", "name": "fake"}
    patch = {"finding": finding, "family": "detach-shared-input", "file": "a.py", "line": 3, "also_fixes": []}
    entry = {"file": "double-backward/a.py", "category": "double-backward"}
    o = acc.Outcome("double-backward/a.py", "fix", "ok", 1.0)
    acc._score_fix(entry, {"patches": [patch], "unpatched": [], "rejected": []}, o)
    assert o.patched and not o.changed
    o = acc.Outcome("double-backward/a.py", "fix", "ok", 1.0)
    acc._score_fix(entry, {"patches": [patch], "unpatched": [{"code": "GG001"}], "rejected": []}, o)
    assert not o.patched  # a finding of the category is left without a patch
    o = acc.Outcome("clean/a.py", "fix", "ok", 1.0)
    acc._score_fix({"file": "clean/a.py", "category": "clean", "clean": True}, {"patches": [patch]}, o)
    assert o.changed and not o.patched
    s = acc.score([entry, {"file": "clean/a.py", "clean": True}],
                  [acc.Outcome("double-backward/a.py", "fix", "ok", 1.0, patched=True), o])
    assert (s.patched, s.buggy, s.changed, s.clean) == (1, 1, 1, 1)


def test_checkpoint_and_param_data_candidates() -> None:
    src = """\
        import torch
        from torch.utils.checkpoint import checkpoint
        lin = torch.nn.Linear(4, 4)
        x = torch.randn(2, 4)
        y = checkpoint(lin, x)
        lin.weight.data = lin.weight / lin.weight.norm()
        """
    fams = _texts(src, _finding("GG015", "x", 5, created=4))
    assert fams["checkpoint-non-reentrant"][0].splitlines()[4] == "y = checkpoint(lin, x, use_reentrant=False)"
    fams = _texts(src, _finding("GG016", "lin.weight", 6))
    assert [t.splitlines()[5:] for t in fams["copy-into-param"]] == [
        ["lin.weight.data.copy_(lin.weight / lin.weight.norm())"],
        ["with torch.no_grad():", "    lin.weight.copy_(lin.weight / lin.weight.norm())"]]


def test_carried_self_state_is_not_detached_in_a_module_level_loop() -> None:
    src = """\
        import torch
        class Cell(torch.nn.Module):
            def forward(self, x):
                self.h = torch.tanh(x + self.h)
                return self.h
        cell = Cell()
        for step in range(3):
            cell(torch.randn(2)).sum().backward()
        """
    fams = _texts(src, _finding("GG004", "self.h", 4, created=4))
    assert "detach-carried-state" not in fams
    assert fams["detach-on-write"]


def test_sign_gets_a_straight_through_estimator() -> None:
    src = """\
        import torch
        w = torch.randn(3, requires_grad=True)
        out = (torch.sign(w) * 2).sum()
        """
    fams = _texts(src, _finding("GG013", "w", 3, created=2, fix_at=[3]))
    assert fams["straight-through"][0].splitlines()[2] == "out = ((w + (torch.sign(w) - w).detach()) * 2).sum()"


SLICE_INIT = """\
    import torch
    def init(E):
        E[:, 0::2] = torch.ones(4, 2)
        E[:, 1::2] = torch.zeros(4, 2)
        E.detach_()
        print(E.shape)
    """


def test_leaf_writes_in_a_row_are_wrapped_together() -> None:
    """GG006 on the first of several in-place writes into one leaf: wrapping it alone leaves the
    next write for PyTorch to refuse, so the run of writes into `E` goes under one no_grad."""
    texts = _texts(SLICE_INIT, _finding("GG006", "E", 3))["no-grad-update"]
    together = textwrap.dedent(SLICE_INIT).replace(
        "    E[:, 0::2] = torch.ones(4, 2)\n    E[:, 1::2] = torch.zeros(4, 2)\n    E.detach_()\n",
        "    with torch.no_grad():\n        E[:, 0::2] = torch.ones(4, 2)\n        E[:, 1::2] = torch.zeros(4, 2)\n"
        "        E.detach_()\n")
    assert together in texts
