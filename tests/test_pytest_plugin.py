"""The pytest plugin, run the way users run it: pytest in a subprocess on a small project.

Expected findings are written as `# <- name` tags on the lines they must point at; the tests
compare (test, phase, fixture, code, variable, line) tuples read back from JUnit XML, never prose.
"""
from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from graphguard.errors import GraphGuardUsageError
from graphguard.pytest_plugin import _codes

# A project's test module: correct training code (must stay quiet), and misuse in the test body,
# in a fixture's setup and in a fixture's teardown.
PROJECT = textwrap.dedent('''
    import pytest
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 8)
            self.head = nn.Linear(8, 1)

        def forward(self, x):
            return self.head(torch.tanh(self.body(x)))


    def batches(n=3):
        g = torch.Generator().manual_seed(0)
        for _ in range(n):
            x = torch.randn(16, 4, generator=g)
            yield x, x.sum(dim=1, keepdim=True)


    @pytest.fixture
    def net():
        torch.manual_seed(0)
        return Net()


    @pytest.fixture
    def pretrained():
        torch.manual_seed(0)
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in batches(2):
            opt.zero_grad()
            feats = torch.tanh(model.body(x)).detach()  # <- pretrained-cut
            loss = F.mse_loss(model.head(feats), y)
            loss.backward()
            opt.step()  # <- pretrained-step
        return model


    @pytest.fixture
    def calibrated(net):
        yield net
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        target = net(torch.ones(2, 4))
        loss = F.mse_loss(net(torch.zeros(2, 4)), target)  # <- calibrated-target
        loss.backward()
        opt.step()


    def test_clean_training(net):
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        for x, y in batches():
            opt.zero_grad()
            loss = F.mse_loss(net(x), y)
            loss.backward()
            opt.step()


    def test_gradient_accumulation(net):
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        opt.zero_grad()
        for i, (x, y) in enumerate(batches(4)):
            loss = F.mse_loss(net(x), y) / 2
            loss.backward()
            if i % 2 == 1:
                opt.step()
                opt.zero_grad()


    def test_two_losses_retain_graph(net):
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        for x, y in batches():
            opt.zero_grad()
            out = net(x)
            F.mse_loss(out, y).backward(retain_graph=True)
            out.abs().mean().backward()
            opt.step()


    def test_gated_residual(net):
        gate = nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([*net.parameters(), gate], lr=0.05)
        for x, y in batches():
            opt.zero_grad()
            is_open = (gate > 0).float()  # <- gate-cut
            loss = F.mse_loss(net(x) + is_open * y, y)
            loss.backward()
            opt.step()  # <- gate-step
        assert loss.item() < 1e3


    def test_stale_reference(net):
        scale = torch.ones(1, requires_grad=True)  # <- scale
        reference = torch.sin(torch.linspace(0, 3, 16)[:, None] * scale)  # <- reference
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        for x, _ in batches():
            opt.zero_grad()
            loss = F.mse_loss(net(x), reference)  # <- stale-target
            loss.backward()  # <- stale-backward
            opt.step()


    def test_uses_pretrained(pretrained):
        assert pretrained(torch.zeros(1, 4)).shape == (1, 1)


    def test_uses_calibrated(calibrated):
        assert calibrated(torch.zeros(1, 4)).shape == (1, 1)


    def test_needless_requires_grad(net):
        noise = torch.randn(16, 4, requires_grad=True)  # <- noise
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        for x, y in batches(2):
            opt.zero_grad()
            loss = F.mse_loss(net(x + 0.01 * noise), y)
            loss.backward()
            opt.step()


    @pytest.mark.graphguard(enabled=False)
    def test_guard_turned_off(net):
        gate = nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([gate], lr=0.1)
        loss = F.mse_loss(net(torch.ones(2, 4)) * (gate > 0).float(), torch.ones(2, 1))
        loss.backward()
        opt.step()
''').strip() + "\n"  # pytester.makepyfile strips blank lines at the ends: keep line numbers equal

# Tests that ask for the guard themselves (marker, fixture) in a run without --graphguard.
MARKS = textwrap.dedent('''
    import pytest
    import torch
    import torch.nn.functional as F


    def silent_cut():
        w = torch.nn.Parameter(torch.ones(3))
        b = torch.nn.Parameter(torch.zeros(3))
        opt = torch.optim.SGD([w, b], lr=0.1)
        opt.zero_grad()
        keep = (w > 0).float()
        loss = ((keep + b) ** 2).sum()
        loss.backward()
        opt.step()  # <- cut-step


    def stale_reference():
        w = torch.nn.Parameter(torch.randn(8))
        reference = torch.sin(torch.linspace(0, 3, 8) * torch.ones(8, requires_grad=True))
        opt = torch.optim.SGD([w], lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            loss = F.mse_loss(w, reference)
            loss.backward()
            opt.step()


    def copy_construct():
        w = torch.nn.Parameter(torch.ones(2))
        return torch.tensor([w[0], w[1]])  # <- copy


    def test_unmarked_misuse():
        silent_cut()


    @pytest.mark.graphguard
    def test_marked_misuse():
        silent_cut()


    @pytest.mark.graphguard(ignore=["GG008"])
    def test_marked_ignore():
        silent_cut()


    @pytest.mark.graphguard(fail_on="warning")
    def test_marked_fail_on_warning():
        copy_construct()


    @pytest.mark.graphguard(select="GG777")
    def test_marked_unknown_code():
        pass


    def test_fixture_expect(graphguard):
        with graphguard.expect("GG008") as caught:
            silent_cut()
        assert [(f.code, f.subject.name) for f in caught.findings] == [("GG008", "w")]


    def test_fixture_expect_stops_before_the_crash(graphguard):
        with graphguard.expect("GG001", "GG002"):
            stale_reference()


    def test_fixture_expect_missing(graphguard):
        with graphguard.expect("GG001"):
            silent_cut()


    def test_fixture_findings(graphguard):
        copy_construct()
        assert [f.code for f in graphguard.findings] == ["GG104"]


    @pytest.mark.graphguard(enabled=False)
    def test_fixture_but_guard_turned_off(graphguard):
        pass
''').strip() + "\n"


def tags(src: str) -> dict[str, int]:
    """Line number of every `# <- tag` in a source text."""
    out = {}
    for i, line in enumerate(src.splitlines(), 1):
        if "# <- " in line:
            out[line.split("# <- ")[1].strip()] = i
    return out


def junit_findings(path: Path) -> set[tuple]:
    """(test, phase, fixture, code, variable, line) of every graphguard property in a JUnit XML."""
    out = set()
    for case in ET.parse(path).getroot().iter("testcase"):
        for prop in case.iter("property"):
            if prop.get("name") == "graphguard":
                d = json.loads(prop.get("value"))
                loc = d["location"] or {}
                out.add((d["test"].split("::")[-1], d["phase"], d["fixture"], d["code"],
                         d["subject"]["name"], loc.get("line")))
    return out


def errors_only(found: set[tuple], codes: tuple[str, ...] = ("GG0",)) -> set[tuple]:
    return {f for f in found if f[3].startswith(codes)}


P = tags(PROJECT)
M = tags(MARKS)
# Every error-severity finding the project must produce under --graphguard, and no other.
PROJECT_ERRORS = {
    ("test_gated_residual", "call", None, "GG008", "gate", P["gate-step"]),
    ("test_stale_reference", "call", None, "GG002", "reference", P["stale-target"]),
    ("test_stale_reference", "call", None, "GG001", "reference", P["stale-backward"]),
    # every parameter of model.body is cut by one .detach(): one finding names the module
    ("test_uses_pretrained", "setup", "pretrained", "GG008", "model.body", P["pretrained-step"]),
    ("test_uses_calibrated", "teardown", "calibrated", "GG002", "target", P["calibrated-target"]),
}


@pytest.mark.slow
def test_flag_fails_exactly_the_misusing_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_project=PROJECT)
    result = pytester.runpytest_subprocess("--graphguard", "--junitxml=junit.xml")
    # body misuse fails the test; a fixture's misuse is an error at its setup or teardown
    result.assert_outcomes(passed=6, failed=2, errors=2)
    result.stdout.fnmatch_lines_random([
        "FAILED test_project.py::test_gated_residual - Failed: graphguard*",
        "FAILED test_project.py::test_stale_reference - RuntimeError*",
        "ERROR test_project.py::test_uses_pretrained - Failed: graphguard*",
        "ERROR test_project.py::test_uses_calibrated - Failed: graphguard*",
    ])
    found = junit_findings(pytester.path / "junit.xml")
    assert errors_only(found) == PROJECT_ERRORS
    # below fail-on: reported, listed in the summary, the test passes
    assert ("test_needless_requires_grad", "exit", None, "GG103", "noise", P["noise"]) in found
    assert not any(f[0] in ("test_clean_training", "test_gradient_accumulation",
                            "test_two_losses_retain_graph", "test_guard_turned_off") for f in found)

    # the failure reports: variable, lines, where (fixture and phase), diagram
    out = result.stdout
    out.fnmatch_lines([
        "*_ test_gated_residual _*",
        "graphguard: autograd misuse (fail-on: error)",
        f"  GG008 param-without-grad * gate at test_project.py:{P['gate-step']} (in the test)",
        "*- graphguard call -*",
        "graphguard: 1 finding(s) in the test:",
        "GG008 param-without-grad *",
        f"  here * test_project.py:{P['gate-step']} *",
        f"  cut-by * test_project.py:{P['gate-cut']} *",
        "  fix *",
    ])
    out.fnmatch_lines([
        "*_ test_stale_reference _*",
        "*RuntimeError: Trying to backward through the graph a second time*",
        "*- graphguard call -*",
        f"  created * test_project.py:{P['reference']} *",
        f"  here * test_project.py:{P['stale-backward']} *",
        "  diagram * graphguard-report/tests/test_project.py_test_stale_reference/graphs/GG001-1.*",
    ])
    out.fnmatch_lines([
        "*_ ERROR at setup of test_uses_pretrained _*",
        f"  GG008 * model.body at test_project.py:{P['pretrained-step']} "
        "(in setup of fixture 'pretrained')",
        f"  cut-by * test_project.py:{P['pretrained-cut']} *",
    ])
    out.fnmatch_lines([
        "*_ ERROR at teardown of test_uses_calibrated _*",
        f"  GG002 * target at test_project.py:{P['calibrated-target']} "
        "(in teardown of fixture 'calibrated')",
    ])
    # the summary lists every finding, those below fail-on included
    out.fnmatch_lines([
        "*= graphguard =*",
        f"test_project.py::test_needless_requires_grad ?exit? GG103 * noise test_project.py:{P['noise']}",
        "graphguard: 5 error(s), 0 warning(s), * info in 8 guarded test(s); 4 failed by graphguard",
    ])
    diagrams = list((pytester.path / "graphguard-report" / "tests").rglob("GG001-1.dot"))
    assert diagrams, "the stale-graph finding has a diagram"


@pytest.mark.slow
def test_marker_and_fixture_without_the_flag(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_project=PROJECT, test_marks=MARKS)
    result = pytester.runpytest_subprocess("--strict-markers", "--junitxml=junit.xml",
                                           "--graphguard-no-diagrams")
    # guard off by default: only the test PyTorch itself crashes on fails in the project
    result.assert_outcomes(passed=13, failed=4, errors=2)
    result.stdout.fnmatch_lines_random([
        "FAILED test_project.py::test_stale_reference - RuntimeError*",
        "FAILED test_marks.py::test_marked_misuse - Failed: graphguard*",
        "FAILED test_marks.py::test_marked_fail_on_warning - Failed: graphguard*",
        "FAILED test_marks.py::test_fixture_expect_missing - AssertionError*",
        "ERROR test_marks.py::test_marked_unknown_code - Failed*",
        "ERROR test_marks.py::test_fixture_but_guard_turned_off - Failed*",
    ])
    result.stdout.fnmatch_lines_random([
        "E *AssertionError: expected a graphguard finding GG001 in this block; it produced only: GG008 w*",
        "graphguard: unknown rule code 'GG777'*",
        "graphguard fixture: the guard is off for this test*",
    ])
    found = junit_findings(pytester.path / "junit.xml")
    assert {f for f in found if f[0].startswith("test_stale")} == set()  # the guard was off
    assert ("test_marked_misuse", "call", None, "GG008", "w", M["cut-step"]) in found
    assert ("test_marked_fail_on_warning", "call", None, "GG104", None, M["copy"]) in {
        f[:4] + (None, f[5]) for f in found}
    # expected findings are the test's business: not reported, not failing
    assert not any(f[0] in ("test_marked_ignore", "test_fixture_expect",
                            "test_fixture_expect_stops_before_the_crash") and f[3].startswith("GG0")
                   for f in found)


def test_ini_options(pytester: pytest.Pytester) -> None:
    pytester.makeini(textwrap.dedent("""
        [pytest]
        graphguard = true
        graphguard_fail_on = warning
        graphguard_select = GG1
        graphguard_ignore = GG103
    """))
    pytester.makepyfile(test_ini=textwrap.dedent('''
        import torch

        def test_copy_construct_is_a_warning():
            w = torch.nn.Parameter(torch.ones(2))
            torch.tensor([w[0], w[1]])

        def test_needless_is_ignored():
            x = torch.ones(3, requires_grad=True)
            (x * 2).sum()

        def test_gg0_is_not_selected():
            w = torch.nn.Parameter(torch.ones(3))
            b = torch.nn.Parameter(torch.zeros(3))
            opt = torch.optim.SGD([w, b], lr=0.1)
            loss = (((w > 0).float() + b) ** 2).sum()
            loss.backward()
            opt.step()
    '''))
    result = pytester.runpytest_subprocess("--graphguard-no-diagrams")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*_ test_copy_construct_is_a_warning _*",
                                 "graphguard: autograd misuse (fail-on: warning)",
                                 "  GG104 copy-construct-detach * w at test_ini.py:5 (in the test)"])


@pytest.mark.slow
def test_xdist_reports_travel_to_the_controller(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_project=PROJECT)
    result = pytester.runpytest_subprocess("-n", "2", "--graphguard", "--graphguard-report", "gg",
                                           "--graphguard-no-diagrams", "--junitxml=junit.xml")
    result.assert_outcomes(passed=6, failed=2, errors=2)
    result.stdout.fnmatch_lines([
        "*= graphguard =*",
        "graphguard: 5 error(s), 0 warning(s), * info in 8 guarded test(s); 4 failed by graphguard",
        "graphguard: report *gg*report.json*",
    ])
    assert errors_only(junit_findings(pytester.path / "junit.xml")) == PROJECT_ERRORS
    from graphguard.report.json_report import load_report

    report = load_report(str(pytester.path / "gg" / "report.json"))
    got = {(d["test"].split("::")[-1], d["phase"], d["fixture"], d["code"], d["subject"]["name"],
            d["location"]["line"]) for d in report["findings"] if d["code"].startswith("GG0")}
    assert got == PROJECT_ERRORS
    assert report["run"]["backward_calls"] > 0


def test_off_by_default_and_torch_not_imported(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ngraphguard = true\n")
    pytester.makepyfile(test_plain=textwrap.dedent('''
        import sys

        def test_plain(pytestconfig):
            assert pytestconfig.pluginmanager.hasplugin("graphguard")
            assert "torch" not in sys.modules
    '''))
    # the ini turns the guard on, --no-graphguard off again: the plugin must not load torch
    result = pytester.runpytest_subprocess("--no-graphguard")
    result.assert_outcomes(passed=1)
    assert "= graphguard =" not in result.stdout.str()


def test_help_and_usage_errors(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*--graphguard *", "*--graphguard-fail-on*", "*graphguard_select*"])
    result = pytester.runpytest_subprocess("--graphguard", "--graphguard-select", "XYZ")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'XYZ' is not a rule code prefix*"])


def test_codes_parse_lists_and_comma_strings() -> None:
    assert _codes("GG0, gg101 GG2") == ("GG0", "GG101", "GG2")
    assert _codes(["GG103"]) == ("GG103",)
    assert _codes(None) == ()
    with pytest.raises(GraphGuardUsageError):
        _codes("E501")


@pytest.mark.slow
def test_demo_project_fails_only_the_test_that_hits_the_bug(pytester: pytest.Pytester) -> None:
    demo = Path(__file__).resolve().parent.parent / "examples" / "pytest_demo"
    for src in demo.rglob("*"):
        if src.is_file() and "__pycache__" not in src.parts and "graphguard-report" not in src.parts:
            dst = pytester.path / src.relative_to(demo)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())
    plain = pytester.runpytest_subprocess()
    plain.assert_outcomes(passed=5)
    step = line_containing(demo / "denoise" / "train.py", "opt.step()")
    cut = line_containing(demo / "denoise" / "model.py", "gate = (self.gate_logit > 0)")
    guarded = pytester.runpytest_subprocess("--graphguard", "--graphguard-no-diagrams")
    guarded.assert_outcomes(passed=4, failed=1)
    guarded.stdout.fnmatch_lines([
        "*_ test_gated_model_learns _*",
        f"  GG008 param-without-grad * model.gate_logit at denoise/train.py:{step} (in the test)",
        "*- graphguard call -*",
        f"  cut-by * denoise/model.py:{cut} *",
    ])


def line_containing(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)
