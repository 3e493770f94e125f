"""The command line as users call it: run (script and -m), arguments, selection, exit status,
re-rendering saved reports."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

STALE = textwrap.dedent("""\
    import sys
    import torch
    w = torch.nn.Parameter(torch.ones(3))
    scale = torch.ones(3, requires_grad=True)
    ref = torch.sin(scale * 2)
    opt = torch.optim.SGD([w], lr=0.1)
    print("args", sys.argv[1:])
    for step in range(int(sys.argv[1])):
        loss = ((w - ref) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")


def gg(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphguard", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_script_args_and_json(tmp_path):
    (tmp_path / "train.py").write_text(STALE)
    p = gg("run", "--mode", "collect", "--no-diagrams", "--json", "out/r.json", "train.py", "2", cwd=tmp_path)
    assert "args ['2']" in p.stdout
    rep = json.loads((tmp_path / "out" / "r.json").read_text())
    assert rep["schema_version"] == 1 and rep["tool"]["name"] == "graphguard"
    assert rep["run"]["target"] == "train.py" and rep["run"]["status"] == "raised"
    assert rep["run"]["exception"]["type"] == "RuntimeError"
    codes = {(f["code"], f["subject"]["name"], f["location"]["line"]) for f in rep["findings"]}
    assert ("GG001", "ref", 11) in codes
    assert p.returncode == 1


def test_raise_mode_is_the_default(tmp_path):
    (tmp_path / "train.py").write_text(STALE)
    p = gg("run", "--no-diagrams", "--json", "r.json", "train.py", "2", cwd=tmp_path)
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["run"]["exception"]["type"] == "GraphMisuseError"
    assert [f["code"] for f in rep["findings"] if f["severity"] == "error"] == ["GG001"]
    assert rep["findings"][0]["before_crash"] is True
    assert p.returncode == 1


def test_select_ignore_and_fail_on(tmp_path):
    (tmp_path / "train.py").write_text(STALE)
    p = gg("run", "--mode", "collect", "--no-diagrams", "--json", "r.json", "--ignore", "GG0",
           "train.py", "1", cwd=tmp_path)
    rep = json.loads((tmp_path / "r.json").read_text())
    assert {f["code"] for f in rep["findings"]} == {"GG103"}
    assert p.returncode == 0  # info only
    p = gg("run", "--mode", "collect", "--no-diagrams", "--json", "r.json", "--ignore", "GG0",
           "--fail-on", "info", "train.py", "1", cwd=tmp_path)
    assert p.returncode == 1
    p = gg("run", "--mode", "collect", "--no-diagrams", "--json", "r.json", "--select", "GG103",
           "train.py", "2", cwd=tmp_path)
    rep = json.loads((tmp_path / "r.json").read_text())
    assert {f["code"] for f in rep["findings"]} == {"GG103"}
    assert p.returncode == 1  # the script itself raised (PyTorch's error), status 1


def test_run_module(tmp_path):
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text(STALE)
    p = gg("run", "--mode", "collect", "--no-diagrams", "--json", "r.json", "-m", "proj.train", "2",
           cwd=tmp_path)
    assert "args ['2']" in p.stdout
    rep = json.loads((tmp_path / "r.json").read_text())
    assert any(f["code"] == "GG001" for f in rep["findings"])


def test_module_gets_every_argument_after_it(tmp_path):
    """As `python -m`: the module's own options (a launcher's --nproc_per_node, a script after
    them, the script's options) are the module's, never graphguard's."""
    pkg = tmp_path / "launch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "run.py").write_text("import sys\nprint('argv', sys.argv[1:])\n")
    p = gg("run", "--mode", "collect", "--no-diagrams", "--json", "r.json", "-m", "launch.run",
           "--nproc_per_node", "2", "train.py", "--lr", "3", "-m", "x", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "argv ['--nproc_per_node', '2', 'train.py', '--lr', '3', '-m', 'x']" in p.stdout
    q = gg("run", "--no-diagrams", "-mlaunch.run", "--mode", "raise", cwd=tmp_path)
    assert q.returncode == 0 and "argv ['--mode', 'raise']" in q.stdout


def test_report_rerender(tmp_path):
    (tmp_path / "train.py").write_text(STALE)
    gg("run", "--mode", "collect", "--no-diagrams", "--json", "r.json", "train.py", "2", cwd=tmp_path)
    text = gg("report", "r.json", "--format", "text", cwd=tmp_path)
    assert text.returncode == 0 and "GG001 stale-graph" in text.stdout
    sarif = json.loads(gg("report", "r.json", "--format", "sarif", cwd=tmp_path).stdout)
    results = sarif["runs"][0]["results"]
    assert any(r["ruleId"] == "GG001" and r["locations"][0]["physicalLocation"]["region"]["startLine"] == 11
               for r in results)


def test_clean_script_exits_zero(tmp_path):
    (tmp_path / "ok.py").write_text(STALE.replace("scale = torch.ones(3, requires_grad=True)",
                                                  "scale = torch.ones(3)"))
    p = gg("run", "--no-diagrams", "ok.py", "3", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "no findings" in p.stderr


CUSTOM_STEP = textwrap.dedent("""\
    import torch
    class MySGD(torch.optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, {"lr": lr})
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p -= group["lr"] * p.grad
    model = torch.nn.Linear(3, 1)
    opt = MySGD(model.parameters(), lr=0.1)
    for step in range(2):
        loss = model(torch.randn(4, 3)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")


def test_custom_optimizer_step_with_grad_on_is_reported_before_pytorch_refuses(tmp_path):
    (tmp_path / "train.py").write_text(CUSTOM_STEP)
    gg("run", "--mode", "collect", "--no-diagrams", "--json", "r.json", "train.py", cwd=tmp_path)
    rep = json.loads((tmp_path / "r.json").read_text())
    found = [(f["code"], f["subject"]["name"], f["location"]["line"], f["before_crash"]) for f in rep["findings"]]
    assert found == [("GG006", "model.weight", 9, True)]
