"""`graphguard fix` on findings that show only some iterations into the run.

The first run gets several times the verification runs' optimizer steps (command.FIRST_RUN_FACTOR),
and a finding first reported at iteration k is verified by runs of at least k + 2 steps
(command.steps_for); a run cut before that iteration proves nothing about the finding
(verify.covered), so it neither verifies a patch nor counts the finding as fixed by another one.

Headers: `# fix: CODE family line [steps=N]` (tests/fixkit.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fixkit import check_annotated, run_fix, write_program
from graphguard.fix.command import steps_for
from graphguard.fix.verify import Result, covered, gone, judge

pytestmark = pytest.mark.slow


# a smoothed loss that starts keeping graphs at epoch 3: reported at iteration 6, after the 3
# steps every verification run is cut to
LATE_RUNNING_VALUE = """\
    # fix: GG101 detach-running-value 13 steps=3
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    smoothed = torch.zeros(())
    for epoch in range(10):
        x = torch.randn(16, 4)
        loss = (net(x) ** 2).mean()
        if epoch >= 3:
            smoothed = 0.9 * smoothed + 0.1 * loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(float(smoothed))
    """

# its clean twin: the running value is a number
LATE_RUNNING_NUMBER = """\
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    smoothed = 0.0
    for epoch in range(10):
        x = torch.randn(16, 4)
        loss = (net(x) ** 2).mean()
        if epoch >= 3:
            smoothed = 0.9 * smoothed + 0.1 * loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(smoothed)
    """


def test_late_finding_is_found_and_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = check_annotated(tmp_path, monkeypatch, LATE_RUNNING_VALUE)
    assert doc["first_run_steps"] > doc["max_steps"]
    assert doc["patches"][0]["after"]["steps"] >= 8  # iteration 6 + 2


def test_late_clean_twin_gets_no_patch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_program(tmp_path, LATE_RUNNING_NUMBER)
    before = path.read_text()
    rc, doc = run_fix(tmp_path, monkeypatch, steps=3)
    assert rc == 0 and doc["findings"] == [] and doc["patches"] == []
    assert path.read_text() == before


def _finding(iteration: int) -> dict:
    where = {"file": "train.py", "line": 12, "function": "<module>", "code": ""}
    return {"code": "GG101", "severity": "warning", "location": where, "related": [], "iteration": iteration,
            "subject": {"name": "smoothed", "kind": "tensor", "summary": "f32[]", "created_at": where}}


def _res(status: str, iterations: int, findings: list | None = None) -> Result:
    return Result(True, findings or [], {"status": status, "iterations": iterations}, {"steps": iterations, "params": {}})


def test_steps_for_follows_the_iteration_of_the_finding() -> None:
    assert steps_for([_finding(0)], 3, 12) == 3      # early findings: the --max-steps runs
    assert steps_for([_finding(1)], 3, 12) == 3
    assert steps_for([_finding(4)], 3, 12) == 6      # k + 2
    assert steps_for([_finding(0), _finding(6)], 3, 12) == 8
    assert steps_for([_finding(20)], 3, 12) == 12    # never more than the first run had


def test_a_run_cut_before_the_finding_proves_nothing() -> None:
    f = _finding(6)
    base = _res("exited", 12, [f])
    short = _res("exited", 3)
    assert not covered(f, short, base) and not gone(f, short, base)
    assert judge(f, base, short) is not None
    long = _res("exited", 8)
    assert covered(f, long, base) and gone(f, long, base)
    assert judge(f, base, long) is None
    # a program that ended on its own went as far as it goes
    assert gone(f, _res("ok", 5), base)
    # a finding of the run's end (its iteration is the run's length) is covered by a run as long
    end = _finding(12)
    assert gone(end, _res("exited", 12), _res("exited", 12, [end]))
    assert not gone(end, _res("exited", 3), _res("exited", 12, [end]))
