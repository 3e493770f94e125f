"""`graphguard fix` on a gradient taken inside inference mode (GG014): the region the finding's
fix-at names runs under `torch.no_grad()` instead, which the `enable_grad()` inside can turn back
on (families/inference_mode.py). Headers: `# fix: CODE family line [steps=N]` (tests/fixkit.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fixkit import check_annotated, run_fix, write_program
from graphguard.fix.families.inference_mode import no_grad_for_inference_mode
from graphguard.fix.tree import Source

pytestmark = pytest.mark.slow

# a saliency map under an inference-mode decorator (the benchmark's case enters a context object)
SALIENCY = """\
    # fix: GG014 no-grad-for-inference-mode 10
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)


    @torch.inference_mode()
    def saliency(batch):
        with torch.enable_grad():
            inp = batch.clone().requires_grad_(True)
            score = model(inp).max(dim=1).values.sum()
            (g,) = torch.autograd.grad(score, inp)
        return g.abs().mean(0)


    for step in range(4):
        x, y = torch.randn(10, 6), torch.randint(0, 3, (10,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 2 == 1:
            print(step, saliency(x))
    """


def test_inference_mode_decorator_becomes_no_grad(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = check_annotated(tmp_path, monkeypatch, SALIENCY)
    assert "+@torch.no_grad()" in doc["patches"][0]["diff"]


def test_no_grad_twin_gets_no_patch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean = SALIENCY.replace("    # fix: GG014 no-grad-for-inference-mode 10\n", "") \
        .replace("@torch.inference_mode()", "@torch.no_grad()")
    path = write_program(tmp_path, clean)
    before = path.read_text()
    rc, doc = run_fix(tmp_path, monkeypatch, steps=3)
    assert rc == 0 and doc["findings"] == [] and doc["patches"] == []
    assert path.read_text() == before


def _gg014(line: int, op: str = "torch.inference_mode()") -> dict:
    where = {"file": "train.py", "line": line, "function": "f", "code": ""}
    return {"code": "GG014", "severity": "error", "location": where, "subject": {"name": "y"},
            "related": [{"role": "fix-at", "name": "f", "op": op, "location": where}]}


def test_only_the_named_region_and_only_inference_mode() -> None:
    text = ("import torch\n"
            "def f(flag):\n"
            "    ctx = torch.inference_mode() if flag else torch.no_grad()\n"
            "    with ctx:\n"
            "        pass\n"
            "    with torch.inference_mode(False):\n"
            "        pass\n")
    src = Source(text)
    [(family, line, new, _)] = list(no_grad_for_inference_mode(src, _gg014(4), "train.py"))
    assert family == "no-grad-for-inference-mode" and line == 3
    assert "    ctx = torch.no_grad()\n" in new and "inference_mode(False)" in new
    # inference_mode(False) turns it off: nothing to replace; another op at fix-at: not this family
    assert list(no_grad_for_inference_mode(src, _gg014(6), "train.py")) == []
    assert list(no_grad_for_inference_mode(src, _gg014(4, "torch.no_grad()"), "train.py")) == []
