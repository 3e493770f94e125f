"""A bug inside graphguard never reaches the user's program: it becomes a GG901 finding (with the
internal traceback in `details["traceback"]`) and training goes on, bit-identical to a run without
the guard.

Each fault point below is replaced by a function that raises; the test then runs a training loop
that reaches it (clean code in raise mode, code with misuse in warn and collect mode) and compares
every parameter, gradient and optimizer state with an unguarded run.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import graphguard
import graphguard.lookup.names as names_mod
import graphguard.capture.scan as scan_mod
import graphguard.capture.sites as sites_mod
import graphguard.backward_check as backward_mod
import graphguard.report.text as text_mod
from graphguard import GraphGuard, GraphMisuseError, active_guards
from graphguard.capture.recorder import Recorder
from graphguard.engine import Engine
from graphguard.rules import ALL_RULES
from test_same_results import Trace, assert_same_trace, run

pytestmark = [pytest.mark.filterwarnings("ignore::graphguard.GraphGuardWarning"),
              pytest.mark.filterwarnings("ignore:To copy construct from a tensor:UserWarning")]
MARK = "injected graphguard fault"
STEPS = 3  # past the light-mode switch (record_iterations=2)


class InjectedFault(Exception):
    """Not a RuntimeError: user code that catches PyTorch's errors must not hide it."""


def clean_training(_make_opt: Any) -> tuple:
    """Correct code touching every capture point: loss calls, in-place ops, saved tensors, `.grad`
    reads, all three backward entry points, add_param_group, steps past the light-mode switch, and
    a torch warning raised inside the mode."""
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(inplace=True), nn.Linear(12, 3))
    head = nn.Linear(3, 3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, foreach=True)
    opt.add_param_group({"params": head.parameters(), "lr": 1e-3})
    norms = []
    for i in range(STEPS):
        x, y = torch.randn(5, 6, requires_grad=True), torch.randint(0, 3, (5,))
        opt.zero_grad()
        out = head(model(x))
        (gx,) = torch.autograd.grad(out.sum(), x, create_graph=True)
        loss = F.cross_entropy(out, y) + 0.01 * gx.pow(2).mean()
        if i % 2:
            loss.backward()
        else:
            torch.autograd.backward([loss])
        norms.append(sum(float(p.grad.norm()) for p in model.parameters()))
        opt.step()
        with torch.no_grad():
            model[0].weight.mul_(0.999)
        torch.tensor(loss.detach())  # torch warns about copy-constructing from a tensor
    return model, opt, norms


def misused_training(_make_opt: Any) -> tuple:
    """Code with misuse graphguard reports (a target that requires grad, an unused leaf, a second
    backward through a freed graph caught by the user): findings are built, named and worded."""
    model = nn.Linear(4, 4)
    teacher = nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    errors = 0
    for _ in range(STEPS):
        x = torch.randn(3, 4)
        unused = torch.zeros(4, requires_grad=True)
        target = teacher(x)  # not detached: GG002
        opt.zero_grad()
        shared = model(x)
        loss = F.mse_loss(shared, target) + 0 * unused.sum()
        loss.backward()
        try:
            shared.sum().backward()  # freed graph: GG003, then PyTorch's own error
        except RuntimeError:
            errors += 1
        opt.step()
    return nn.ModuleList([model, teacher]), opt, errors


def _graphguard_modules() -> list[Any]:
    return [m for name, m in sorted(sys.modules.items())
            if name == "graphguard" or name.startswith("graphguard.")]


class Fault:
    """Replaces one function (in every graphguard module that imported it by name) by one that
    raises, and counts how often it was reached."""

    def __init__(self, targets: list[tuple[Any, str]]) -> None:
        self.targets = targets
        self.hits = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for owner, attr in self.targets:
            original = getattr(owner, attr)
            boom = self._boom(f"{MARK} in {attr}")
            monkeypatch.setattr(owner, attr, boom)
            if isinstance(owner, type):
                continue
            for mod in _graphguard_modules():  # `from x import f` copies
                if mod is not owner and getattr(mod, attr, None) is original:
                    monkeypatch.setattr(mod, attr, boom)

    def _boom(self, message: str) -> Callable[..., Any]:
        def boom(*args: Any, **kwargs: Any) -> Any:
            self.hits += 1
            raise InjectedFault(message)
        return boom


FAULTS: dict[str, list[tuple[Any, str]]] = {
    "every-rule-check": [(cls, "check") for cls in ALL_RULES],
    "recorder-before-op": [(Recorder, "_before")],
    "recorder-after-op": [(Recorder, "_after")],
    "recorder-site": [(Recorder, "site")],  # used by the pack hook, the op records, .grad reads
    "grad-read": [(Recorder, "on_grad_read")],
    "backward-prepare": [(GraphGuard, "_prepare_backward")],
    "graph-scan": [(backward_mod, "scan_graph")],
    "graph-walk": [(scan_mod, "GraphScan")],  # the walk and its reads, one loop
    "backward-marks": [(backward_mod, "Mark")],
    "step-pre-hook": [(Recorder, "mark_optimized")],  # also add_param_group
    "step-post-hook": [(GraphGuard, "_end_iteration")],
    "light-mode-switch": [(GraphGuard, "set_recording")],
    "name-resolution": [(names_mod, "candidates")],
    "user-frames": [(sites_mod, "user_site")],  # every site, and GG901's own location
    "finding-wording": [(text_mod, "render_findings")],
    "finding-emit": [(Engine, "catch_expected")],
}

# (workload, mode): clean code in raise mode (a GG901 must not raise), misuse in warn and collect.
RUNS = [("clean", clean_training, "raise"), ("misused", misused_training, "warn"),
        ("misused", misused_training, "collect")]
_PLAIN: dict[str, Trace] = {}


def _plain(name: str, workload: Callable[..., tuple]) -> Trace:
    if name not in _PLAIN:
        _PLAIN[name] = run(workload, "-", None)[0]
    return _PLAIN[name]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("point", list(FAULTS))
def test_fault_becomes_gg901_and_training_is_unharmed(point: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, workload, _mode in RUNS:
        _plain(name, workload)  # before the fault is injected
    fault = Fault(FAULTS[point])
    fault.install(monkeypatch)
    reached = 0
    for name, workload, mode in RUNS:
        before = fault.hits
        guarded, guard = run(workload, "-", {"mode": mode})
        assert_same_trace(_plain(name, workload), guarded)
        assert active_guards() == () and torch._C._len_torch_function_stack() == 0
        if fault.hits == before:
            continue
        reached += 1
        internal = [f for f in guard.findings if f.code == "GG901"]
        assert internal, f"{point} in {name}/{mode}: no GG901"
        assert all(f.severity == "warning" for f in internal)
        assert any(MARK in f.details.get("traceback", "") for f in internal)
        assert any("InjectedFault" in f.args["error"] for f in internal)
    assert reached, f"the workloads never reach {point}: the test would prove nothing"


def test_gg901_traceback_reaches_the_json_report(monkeypatch: pytest.MonkeyPatch) -> None:
    Fault([(Recorder, "_after")]).install(monkeypatch)
    with GraphGuard(mode="collect") as guard:
        clean_training(None)
    report = guard.report()
    internal = [f for f in report["findings"] if f["code"] == "GG901"]
    assert internal and internal[0]["severity"] == "warning"
    tb = internal[0]["details"]["traceback"]
    assert "Traceback" in tb and MARK in tb and "_after" in tb


def test_gg901_is_a_warning_in_raise_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    Fault([(Recorder, "_before")]).install(monkeypatch)
    with pytest.warns(graphguard.GraphGuardWarning, match="GG901"):
        with GraphGuard(mode="raise"):
            clean_training(None)


def test_repeated_fault_is_reported_once_per_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule failing at every backward of a long loop gives a bounded number of GG901 findings."""
    Fault([(cls, "check") for cls in ALL_RULES]).install(monkeypatch)
    counts = []
    for steps in (3, 12):
        with GraphGuard(mode="collect") as guard:
            model = nn.Linear(3, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for _ in range(steps):
                opt.zero_grad()
                F.mse_loss(model(torch.randn(2, 3)), torch.randn(2, 1)).backward()
                opt.step()
        counts.append(sum(f.code == "GG901" for f in guard.findings))
    assert 0 < counts[0] == counts[1]


def test_error_finding_still_raised_when_wording_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even if the text of a finding cannot be rendered, an error still stops the misuse before
    PyTorch's crash (with a bare message naming the code), and the wording failure is GG901."""
    Fault([(text_mod, "render_findings")]).install(monkeypatch)
    w = nn.Parameter(torch.randn(3))
    with pytest.raises(GraphMisuseError, match=r"GG00[13]") as info:
        with GraphGuard(mode="raise") as guard:
            h = w.exp()
            h.sum().backward()
            h.sum().backward()
    assert w.grad is not None and info.value.findings
    assert "GG901" in [f.code for f in guard.findings]


def test_fault_in_the_pack_hook_keeps_the_inplace_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pack hook's fallback still carries the version check: an in-place change of a saved
    tensor still fails the backward, as in plain PyTorch, instead of giving a wrong gradient."""
    Fault([(Recorder, "site")]).install(monkeypatch)
    with GraphGuard(mode="collect", select=["GG901"]) as guard:
        w = torch.randn(3, requires_grad=True)
        y = w.exp()  # saves its result
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    assert "GG901" in [f.code for f in guard.findings]


def test_torch_warning_shown_when_finding_the_user_line_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard re-points torch warnings raised inside its mode at the user's line; if finding
    that line fails, the warning is still shown (where it was raised), not turned into an error."""
    import warnings

    shown = []
    monkeypatch.setattr(warnings, "showwarning", lambda message, *a, **k: shown.append(str(message)))
    fault = Fault([(sites_mod, "user_site")])
    fault.install(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with GraphGuard(mode="collect") as guard:
            torch.tensor(torch.ones(2))
    assert any("copy construct" in m for m in shown)
    assert fault.hits and "GG901" in [f.code for f in guard.findings]


def test_fault_in_a_manual_step_becomes_gg901(monkeypatch: pytest.MonkeyPatch) -> None:
    Fault([(GraphGuard, "_end_iteration")]).install(monkeypatch)
    with GraphGuard(mode="raise") as guard:
        w = torch.randn(3, requires_grad=True)
        w.exp().sum().backward()
        guard.step()  # a loop without optimizer marks its iterations by hand
    assert "GG901" in [f.code for f in guard.findings]


def _cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str]:
    from graphguard.cli import main

    rc = main(list(argv))
    return rc, capsys.readouterr().err


STALE_SCRIPT = """\
import sys, torch
w = torch.randn(3, requires_grad=True)
h = w.exp()
h.sum().backward()
try:
    h.sum().backward()
except RuntimeError:
    pass
sys.exit(4)
"""


def test_cli_still_writes_the_report_when_a_finding_cannot_be_serialized(
        capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    import json

    from graphguard.model import Finding

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(STALE_SCRIPT)
    orig = Finding.to_dict

    def broken_for_stale(self: Finding) -> dict:
        if self.code in ("GG001", "GG003"):
            raise InjectedFault(f"{MARK} in to_dict")
        return orig(self)

    monkeypatch.setattr(Finding, "to_dict", broken_for_stale)
    rc, err = _cli(capsys, "run", "--mode", "collect", "--json", "r.json", "--no-diagrams", "train.py")
    assert rc == 4  # the script's own status
    assert "Traceback" not in err
    assert sum(line.startswith("graphguard: error:") for line in err.splitlines()) == 1
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["run"]["status"] == "exited"
    assert "GG103" in [f["code"] for f in report["findings"]]


def test_cli_summary_survives_a_wording_failure(capsys: pytest.CaptureFixture,
                                                monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(STALE_SCRIPT)
    Fault([(text_mod, "render_findings")]).install(monkeypatch)  # cli imports it at call time
    rc, err = _cli(capsys, "run", "--mode", "collect", "--json", "r.json", "--no-diagrams", "train.py")
    assert rc == 4 and "Traceback" not in err
    assert "cannot word the findings" in err and "GG003" in err
    assert (tmp_path / "r.json").exists()
