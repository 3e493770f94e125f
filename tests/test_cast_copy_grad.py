"""GG007 on a `.grad` read of a moved, cast or scaled copy of a requires-grad leaf that the program
still holds by name: the finding is decided by the graph (a straight chain back to one leaf), so
each spelling below gives the same code, the copy's name, the read's line and the copy's line.
Each program also runs plainly first, where it asserts the silent damage itself (.grad is None)."""
from __future__ import annotations

import runpy
import textwrap
from pathlib import Path

import pytest

from graphguard import GraphGuard

PRELUDE = """\
import torch
x = torch.randn(16, 3)
y = x @ torch.tensor([1.0, -2.0, 0.5])
"""

# (id, program body, the copy's name, the line that makes the copy, the line that reads .grad),
# lines counted in the body (the prelude's three lines come first)
SPELLINGS = [
    ("to-dtype", """\
        base64 = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        weight = base64.to(torch.float32)
        for _ in range(2):
            ((x @ weight - y) ** 2).mean().backward()
            if weight.grad is None:
                continue
        """, "weight", 2, 5),
    ("float", """\
        raw = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        coef = raw.float()
        ((x @ coef - y) ** 2).mean().backward()
        assert coef.grad is None
        """, "coef", 2, 4),
    ("scaled", """\
        init = torch.ones(3, requires_grad=True)
        scaled = init * 0.01
        ((x @ scaled - y) ** 2).mean().backward()
        assert scaled.grad is None
        """, "scaled", 2, 4),
    ("dict-entry", """\
        leaf = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        params = {"w": leaf.float()}
        ((x @ params["w"] - y) ** 2).mean().backward()
        assert params["w"].grad is None
        """, "params['w']", 2, 4),
    ("helper-move", """\
        def on_device(t, device="cpu"):
            return t.to(device, dtype=torch.float32)
        theta = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        w = on_device(theta)
        ((x @ w - y) ** 2).mean().backward()
        assert w.grad is None and theta.grad is not None
        """, "w", 2, 6),  # the copy is made inside the helper
]


@pytest.mark.parametrize("body,name,made,read", [pytest.param(*s[1:], id=s[0]) for s in SPELLINGS])
def test_grad_read_of_a_copy_is_gg007_at_its_lines(tmp_path: Path, body: str, name: str, made: int,
                                                   read: int) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PRELUDE + textwrap.dedent(body), encoding="utf-8")
    offset = PRELUDE.count("\n")
    runpy.run_path(str(script))  # plain PyTorch: the program's own asserts hold
    with GraphGuard(mode="collect") as guard:
        runpy.run_path(str(script))
    found = [f for f in guard.findings if f.code == "GG007"]
    assert len(found) == 1, [(f.code, f.subject.name) for f in guard.findings]
    f = found[0]
    assert f.subject.name == name
    assert f.location is not None and f.location.line == offset + read
    assert f.subject.created_at is not None and f.subject.created_at.line == offset + made
    assert {f.code for f in guard.findings} <= {"GG007"}  # no other story about the leaf
