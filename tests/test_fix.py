"""`graphguard fix`: each patch family on a small annotated program (in a tmp dir), a candidate
that fails verification rejected, `--apply` writing only kept patches, a clean program untouched,
bad input as one line. Assertions are on codes, family names and line numbers.

Each program's header says what fix must keep: `# fix: CODE family line [steps=N]` (the finding's
code, the kept candidate's family, the line of the edit in the original file; the optimizer steps
each run is cut to, 3 unless the finding needs more iterations to show).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixkit import check_annotated, run_fix, write_program
from graphguard.cli import main

pytestmark = pytest.mark.slow  # every case runs its program several times in subprocesses

PROGRAMS = {
    "stale_target": """\
        # fix: GG002 detach-at-creation 6
        import torch

        w = torch.zeros(3, requires_grad=True)
        src = torch.ones(3, requires_grad=True)
        target = src * 2
        opt = torch.optim.SGD([w], lr=0.1)
        for step in range(10):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(w * 1.0, target)
            loss.backward()
            opt.step()
        """,
    "carried_state": """\
        # fix: GG004 detach-carried-state 9
        import torch

        torch.manual_seed(0)
        cell = torch.nn.RNNCell(3, 4)
        opt = torch.optim.SGD(cell.parameters(), lr=0.01)
        h = torch.zeros(1, 4)
        for step in range(10):
            x = torch.randn(1, 3)
            h = cell(x, h)
            loss = h.pow(2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    "loss_list": """\
        # fix: GG101 accumulate-item 13 steps=4
        import torch

        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.01)
        losses = []
        for step in range(10):
            loss = lin(torch.randn(4, 3)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss)
        print(sum(losses))
        """,
    "inplace_saved": """\
        # fix: GG005 out-of-place 9
        import torch

        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 3)
        opt = torch.optim.SGD(lin.parameters(), lr=0.01)
        for step in range(10):
            y = torch.sigmoid(lin(torch.randn(4, 3)))
            y.mul_(2)  # sigmoid saved its output
            loss = y.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    "manual_update": """\
        # fix: GG006 no-grad-update 8
        import torch

        w = torch.randn(3, requires_grad=True)
        for step in range(5):
            loss = (w * 2).pow(2).sum()
            loss.backward()
            w -= 0.1 * w.grad
            w.grad = None
        """,
    "missing_zero_grad": """\
        # fix: GG010 zero-grad-before-backward 9
        import torch

        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.01)
        for step in range(10):
            loss = lin(torch.randn(4, 3)).pow(2).mean()
            loss.backward()
            opt.step()
        """,
    "hard_mask": """\
        # fix: GG008 smooth-mask 10
        import torch

        threshold = torch.tensor(0.5, requires_grad=True)
        scale = torch.ones(1, requires_grad=True)
        opt = torch.optim.Adam([threshold, scale], lr=0.05)
        x = torch.linspace(0, 1, 50)
        target = (x > 0.3).float()
        for step in range(10):
            pred = scale * (x > threshold).float()  # hard mask
            loss = ((pred - target) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    "round": """\
        # fix: GG013 straight-through 9
        import torch

        levels = torch.tensor([0.3, 1.7], requires_grad=True)
        scale = torch.ones(1, requires_grad=True)
        opt = torch.optim.Adam([levels, scale], lr=0.05)
        target = torch.tensor([2.0, 5.0])
        for step in range(10):
            pred = scale * torch.round(levels * 2)
            loss = ((pred - target) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    "double_backward_gan": """\
        # fix: GG003 detach-shared-input 15
        import torch

        torch.manual_seed(0)
        gen = torch.nn.Linear(4, 4)
        disc = torch.nn.Linear(4, 1)
        opt_g = torch.optim.SGD(gen.parameters(), lr=0.01)
        opt_d = torch.optim.SGD(disc.parameters(), lr=0.01)
        bce = torch.nn.BCEWithLogitsLoss()
        for step in range(10):
            real = torch.randn(8, 4)
            fake = gen(torch.randn(8, 4))
            opt_d.zero_grad()
            loss_real = bce(disc(real), torch.ones(8, 1))
            loss_fake = bce(disc(fake), torch.zeros(8, 1))
            (loss_real + loss_fake).backward()
            opt_d.step()
            opt_g.zero_grad()
            loss_g = bce(disc(fake), torch.ones(8, 1))
            loss_g.backward()
            opt_g.step()
        """,
    "double_backward_two_heads": """\
        # fix: GG003 sum-losses 13
        import torch

        torch.manual_seed(0)
        enc = torch.nn.Linear(4, 4)
        head_a = torch.nn.Linear(4, 1)
        head_b = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD([*enc.parameters(), *head_a.parameters(), *head_b.parameters()], lr=0.01)
        for step in range(10):
            z = torch.tanh(enc(torch.randn(8, 4)))
            opt.zero_grad()
            loss_a = head_a(z).pow(2).mean()
            loss_a.backward()
            head_b(z).pow(2).mean().backward()
            opt.step()
        """,
    "non_leaf_cast": """\
        # fix: GG007 requires-grad-last 5
        import torch

        torch.manual_seed(0)
        w = torch.randn(3, 1, requires_grad=True).double()
        opt = torch.optim.SGD([w], lr=0.1)
        x = torch.randn(16, 3, dtype=torch.float64)
        for step in range(10):
            opt.zero_grad()
            loss = (x @ w).pow(2).mean()
            loss.backward()
            opt.step()
        """,
    "non_scalar_reduction_none": """\
        # fix: GG012 mean-reduction 7
        import torch

        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.01)
        crit = torch.nn.MSELoss(reduction="none")
        for step in range(10):
            opt.zero_grad()
            loss = crit(lin(torch.randn(8, 3)), torch.zeros(8, 1))
            loss.backward()
            opt.step()
        """,
    "plain_list_of_layers": """\
        # fix: GG011 modulelist 9
        import torch
        import torch.nn as nn


        class Stack(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.blocks = [nn.Linear(4, 4) for _ in range(n)]
                self.out = nn.Linear(4, 1)

            def forward(self, x):
                for b in self.blocks:
                    x = torch.tanh(b(x))
                return self.out(x)


        torch.manual_seed(0)
        model = Stack(2)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for step in range(10):
            opt.zero_grad()
            loss = model(torch.randn(8, 4)).pow(2).mean()
            loss.backward()
            opt.step()
        """,
    "layer_built_in_forward": """\
        # fix: GG011 layer-to-init 14
        import torch
        import torch.nn as nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(4, 8)

            def forward(self, x):
                x = torch.relu(self.body(x))
                # a new head at every call
                self.head = nn.Linear(8, 2)
                return self.head(x)


        torch.manual_seed(0)
        model = Net()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for step in range(10):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(torch.randn(8, 4)), torch.randint(0, 2, (8,)))
            loss.backward()
            opt.step()
        """,
    "loss_under_no_grad": """\
        # fix: GG009 enable-grad 10
        import torch

        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.01)
        for step in range(10):
            x = torch.randn(8, 3)
            opt.zero_grad()
            with torch.no_grad():
                pred = lin(x)
            loss = pred.pow(2).mean()
            loss.requires_grad = True
            loss.backward()
            opt.step()
        """,
    "data_cuts_history": """\
        # fix: GG009 keep-history 9
        import torch

        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.01)
        for step in range(10):
            opt.zero_grad()
            pred = lin(torch.randn(8, 3)).data
            loss = pred.pow(2).mean()
            loss.requires_grad_()
            loss.backward()
            opt.step()
        """,
    "inplace_relu_module": """\
        # fix: GG005 drop-inplace 6
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        act = nn.ReLU(inplace=True)
        lin = nn.Linear(3, 3)
        opt = torch.optim.SGD(lin.parameters(), lr=0.01)
        for step in range(10):
            h = torch.sigmoid(lin(torch.randn(4, 3)))
            y = act(h)
            opt.zero_grad()
            (y * h).sum().backward()
            opt.step()
        """,
    "non_scalar_elementwise": """\
        # fix: GG012 mean-at-backward 10
        import torch

        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.01)
        for step in range(10):
            opt.zero_grad()
            loss = (lin(torch.randn(8, 3)) - 1.0).pow(2)
            loss.backward()
            opt.step()
        """,
}

# one finding patched (GG010), one whose only candidate fails verification (GG013: the loss is
# already zero, so the straight-through estimator cannot give `levels` a non-zero gradient)
MIXED = """\
    import torch

    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(lin.parameters(), lr=0.01)
    levels = torch.tensor([0.3, 1.7], requires_grad=True)
    opt2 = torch.optim.SGD([levels], lr=0.01)
    for step in range(10):
        loss = lin(torch.randn(4, 3)).pow(2).mean()
        loss.backward()
        opt.step()
        quantized = torch.round(levels * 2)  # equal to the target already
        loss2 = ((quantized - torch.tensor([1.0, 3.0])) ** 2).mean()
        opt2.zero_grad()
        loss2.backward()
        opt2.step()
    """


_write = write_program
_fix = run_fix


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_family_gets_a_verified_patch(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_annotated(tmp_path, monkeypatch, PROGRAMS[name])


def test_failing_candidate_rejected_and_apply_writes_only_kept(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, MIXED)
    original = path.read_text().splitlines()
    rc, doc = _fix(tmp_path, monkeypatch, "--apply", steps=4)
    assert rc == 1  # an error finding (GG013) got no verified patch
    assert [(p["finding"]["code"], p["family"], p["line"]) for p in doc["patches"]] == \
        [("GG010", "zero-grad-before-backward", 10)]
    assert [(r["finding"]["code"], r["family"], r["line"]) for r in doc["rejected"]] == \
        [("GG013", "straight-through", 12)]
    assert [d["code"] for d in doc["unpatched"]] == ["GG013"]
    assert doc["applied"] == ["train.py"]
    now = path.read_text().splitlines()
    assert now == original[:9] + ["    opt.zero_grad()"] + original[9:]  # the round line is untouched


def test_clean_program_untouched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, """\
        import torch

        lin = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.01)
        for step in range(3):
            opt.zero_grad()
            lin(torch.randn(4, 3)).pow(2).mean().backward()
            opt.step()
        """)
    before = path.read_text()
    rc, doc = _fix(tmp_path, monkeypatch, "--apply")
    assert rc == 0
    assert doc["patches"] == [] and doc["applied"] == [] and doc["findings"] == []
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fix.json", "train.py"]


def test_missing_script_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "nope.py"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.py" in err
    assert main(["fix"]) == 2


def test_max_steps_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, """\
        import torch

        lin = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.01)
        for step in range(1000):
            opt.zero_grad()
            lin(torch.randn(4, 3)).pow(2).mean().backward()
            opt.step()
        raise AssertionError("not reached")
        """)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--no-diagrams", "--json", "r.json", "--max-steps", "3", "train.py"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["run"]["status"] == "exited" and report["run"]["iterations"] == 3


def test_ellipse_apply_leaves_a_program_that_learns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    shutil.copy(Path(__file__).parent.parent / "examples" / "ellipse" / "broken.py", tmp_path / "train.py")
    rc, doc = _fix(tmp_path, monkeypatch, "--apply", steps=4)
    assert rc == 0
    families = {p["family"] for p in doc["patches"]}
    assert {"smooth-mask"} <= families and families & {"detach-at-use", "detach-at-creation", "no-grad-at-creation"}
    assert main(["run", "--mode", "collect", "--no-diagrams", "--json", "r.json", "train.py"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert not [f["code"] for f in report["findings"] if f["severity"] in ("error", "warning")]
    assert report["run"]["status"] == "ok"
