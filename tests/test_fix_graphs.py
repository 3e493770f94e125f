"""`graphguard fix` on graphs built once and used twice, saved tensors written in place, and losses
read from argmax indices: each family of fix/families/regraph.py, clone.py and soft_argmax.py gets a
verified patch on a program spelled differently from the benchmark case that motivated it, and one
candidate that must be rejected (or not proposed)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fixkit import check_annotated, run_fix, write_program

pytestmark = pytest.mark.slow


PROGRAMS = {
    # a loss made once before a while loop, backward called on it at every pass
    "recompute-forward": """\
        # fix: GG001 recompute-forward 12
        import torch
        torch.manual_seed(0)
        net = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        inputs = torch.randn(8, 4)
        pred = net(inputs)
        err = (pred - 1.0).pow(2).mean()
        step = 0
        while step < 3:
            opt.zero_grad()
            err.backward()
            opt.step()
            step += 1
        """,
    # the value network's step before the policy's loss reaches back through it
    "move-after-step": """\
        # fix: GG005 move-after-step 17
        import torch
        torch.manual_seed(0)
        policy = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        value = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        popt = torch.optim.SGD(policy.parameters(), lr=0.01)
        vopt = torch.optim.SGD(value.parameters(), lr=0.01)
        for it in range(3):
            s = torch.randn(4, 3)
            a = policy(s)
            q = value(torch.cat([s, a.detach()], 1))
            target = torch.randn(4, 1)
            vloss = ((q - target) ** 2).mean()
            ploss = -value(torch.cat([s, a], 1)).mean()
            vopt.zero_grad()
            vloss.backward()
            vopt.step()
            popt.zero_grad()
            ploss.backward()
            popt.step()
        """,
    # an index assignment on tanh's output, which tanh saved for its backward
    "clone-before-write": """\
        # fix: GG005 clone-before-write 8
        import torch
        torch.manual_seed(0)
        w = torch.nn.Parameter(torch.randn(6))
        opt = torch.optim.SGD([w], lr=0.1)
        def squash(v):
            h = torch.tanh(2 * v)
            h[-2:] = 0.0
            return h
        for _ in range(3):
            opt.zero_grad()
            total = squash(w).sum()
            total.backward()
            opt.step()
        """,
    # ReLUs switched to in-place after the model was built, one of them right after a sigmoid
    "inplace-flag-off": """\
        # fix: GG005 inplace-flag-off 8
        import torch
        import torch.nn as nn
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 4), nn.Sigmoid(), nn.ReLU(), nn.Linear(4, 1))
        for mod in net.modules():
            if type(mod) is nn.ReLU:
                mod.inplace = True
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        for _ in range(3):
            opt.zero_grad()
            out = net(torch.randn(5, 4)).mean()
            out.backward()
            opt.step()
        """,
    # a sum of per-chunk losses kept growing into a second pass
    "reset-accumulator": """\
        # fix: GG001 reset-accumulator 15
        import torch
        torch.manual_seed(0)
        net = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        chunks = [torch.randn(4, 3) for _ in range(2)]
        for rnd in range(2):
            total = 0.0
            for part in chunks:
                total += net(part).pow(2).mean()
            opt.zero_grad()
            total.backward()
            opt.step()
            noisy = [p + 0.01 * torch.randn_like(p) for p in chunks]
            for part in noisy:
                total += net(part).pow(2).mean()
            opt.zero_grad()
            total.backward()
            opt.step()
        """,
    # the model's forward hands out its output's .data, and the loss is re-wrapped so backward runs
    "forward-keeps-history": """\
        # fix: GG008 forward-keeps-history 11
        import torch
        torch.manual_seed(0)
        class Scorer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = torch.nn.Linear(4, 3)
                self.out = torch.nn.Linear(3, 1)
            def forward(self, x):
                y = torch.relu(self.body(x))
                return self.out(y).data
        net = Scorer()
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            err = ((net(torch.randn(6, 4)) - 0.5) ** 2).mean()
            err.requires_grad_()
            err.backward()
            opt.step()
        """,
    # no selected item in the first batch: a constant loss stands in for the mean over the selection
    "branch-loss": """\
        # fix: GG009 branch-loss 10
        import torch
        torch.manual_seed(0)
        head = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(head.parameters(), lr=0.1)
        def objective(scores, keep):
            terms = (scores.squeeze(1) - 1.0) ** 2
            count = int(keep.sum())
            if count == 0:
                total = torch.zeros(())
            else:
                total = terms.sum() / count
            return total
        for batch in range(3):
            x = torch.randn(5, 3)
            keep = torch.zeros(5, dtype=torch.bool) if batch == 0 else x[:, 0] > 0
            loss = objective(head(x), keep)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # a regression on the predicted class index
    "soft-argmax": """\
        # fix: GG009 soft-argmax 11
        import torch
        import torch.nn.functional as F
        torch.manual_seed(0)
        clf = torch.nn.Linear(5, 3)
        opt = torch.optim.SGD(clf.parameters(), lr=0.1)
        x = torch.randn(16, 5)
        wanted = torch.randint(0, 3, (16,)).float()
        for _ in range(3):
            scores = clf(x)
            guess = torch.argmax(scores, dim=-1).float()
            loss = F.mse_loss(guess, wanted)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_families_get_a_verified_patch(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_annotated(tmp_path, monkeypatch, PROGRAMS[name])


def test_rewrap_in_another_file_is_dropped_with_the_patch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The no_grad wrapper is in one module and the loss's `requires_grad = True` in another: the
    kept patch changes both files, and is verified as one."""
    (tmp_path / "frozen.py").write_text(textwrap.dedent("""\
        import torch

        class Frozen(torch.nn.Module):
            def forward(self, x):
                with torch.no_grad():
                    return x / x.norm(dim=-1, keepdim=True)
        """), encoding="utf-8")
    (tmp_path / "objective.py").write_text(textwrap.dedent("""\
        import torch

        def spread(z):
            gap = -torch.cdist(z, z).mean()
            gap.requires_grad = True
            return gap
        """), encoding="utf-8")
    write_program(tmp_path, """\
        import torch
        from frozen import Frozen
        from objective import spread
        torch.manual_seed(0)
        enc = torch.nn.Linear(6, 4)
        unit = Frozen()
        opt = torch.optim.SGD(enc.parameters(), lr=0.1)
        for _ in range(3):
            cost = spread(unit(enc(torch.randn(10, 6))))
            opt.zero_grad()
            cost.backward()
            opt.step()
        """)
    rc, doc = run_fix(tmp_path, monkeypatch)
    assert rc == 0, doc
    kept = [p for p in doc["patches"] if p["finding"]["code"] == "GG009"]
    assert kept and kept[0]["family"] == "enable-grad", doc["patches"]
    assert "+++ b/frozen.py" in kept[0]["diff"] and "+++ b/objective.py" in kept[0]["diff"]
    assert doc["after"]["findings"]["error"] == 0 and doc["after"]["findings"]["warning"] == 0


def test_soft_index_that_picks_rows_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """argmax indices used to pick rows of a table: the soft argmax is proposed, but a float index
    cannot index, so the patched run fails and the candidate is rejected."""
    write_program(tmp_path, """\
        import torch
        torch.manual_seed(0)
        head = torch.nn.Linear(4, 5)
        table = torch.randn(5, 2)
        opt = torch.optim.SGD(head.parameters(), lr=0.1)
        for _ in range(3):
            pick = head(torch.randn(7, 4)).argmax(dim=1)
            rows = table[pick]
            loss = rows.pow(2).mean()
            loss.requires_grad = True
            opt.zero_grad()
            loss.backward()
            opt.step()
        """)
    _, doc = run_fix(tmp_path, monkeypatch)
    assert not any(p["family"] == "soft-argmax" for p in doc["patches"]), doc["patches"]
    assert any(r["family"] == "soft-argmax" for r in doc["rejected"]), doc["rejected"]


def test_shared_input_is_not_recomputed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The freed graph is an input two losses share, not the loss backward is called on again:
    building the loss again is not proposed (detaching the shared input is the fix)."""
    write_program(tmp_path, """\
        import torch
        torch.manual_seed(0)
        body = torch.nn.Linear(3, 3)
        head_a = torch.nn.Linear(3, 1)
        head_b = torch.nn.Linear(3, 1)
        params = [*body.parameters(), *head_a.parameters(), *head_b.parameters()]
        opt = torch.optim.SGD(params, lr=0.1)
        for _ in range(3):
            feat = body(torch.randn(4, 3)).tanh()
            loss_a = head_a(feat).mean()
            loss_b = head_b(feat).mean()
            opt.zero_grad()
            loss_a.backward()
            loss_b.backward()
            opt.step()
        """)
    _, doc = run_fix(tmp_path, monkeypatch)
    families = {p["family"] for p in doc["patches"]} | {r["family"] for r in doc["rejected"]}
    assert "recompute-forward" not in families, doc
