"""pytest plugin (pytest11 entry point): autograd misuse fails the test that caused it.

Off unless asked for: ``pytest --graphguard`` (ini ``graphguard = true``) guards every test,
``@pytest.mark.graphguard`` (or requesting the ``graphguard`` fixture) guards one test.

Each guarded test runs its setup, call and teardown inside one ``GraphGuard(mode="collect")``, so a
model built in a fixture and misused in the test body is one story. After each phase the plugin
looks at the findings that phase produced: any at or above ``--graphguard-fail-on`` (default
``error``) fails that phase (a fixture's misuse is an error at setup, the test body's a failure),
with a ``graphguard <phase>`` report section rendered like the text report. Every finding also
travels as a ``("graphguard", json)`` entry of ``user_properties`` (JUnit XML, and back from
pytest-xdist workers), from which the controller builds the terminal summary and, with
``--graphguard-report DIR``, the session's JSON/HTML report.

Marker arguments: ``enabled`` (False turns the guard off), ``select`` (replaces the session's),
``ignore`` (added to the session's), ``fail_on``.
"""
from __future__ import annotations

import inspect
import json
import re
import warnings
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import pytest

# NOTE [lazy torch]: pytest imports this module in every run of every project that has graphguard
# installed. Only torch-free modules are imported here; graphguard.guard (and torch, seconds to
# import) is loaded when the first guarded test starts.
from .errors import GraphGuardUsageError
from .model import SEVERITIES, relpath, severity_rank

if TYPE_CHECKING:
    from .guard import GraphGuard
    from .model import Finding

__all__ = ["graphguard"]

# fail-on levels, lowest first; "never" ranks above every severity
_LEVELS = {s: severity_rank(s) for s in SEVERITIES} | {"never": len(SEVERITIES)}
_CODE = re.compile(r"GG\d{0,3}", re.IGNORECASE)
_MARKER_ARGS = ("enabled", "select", "ignore", "fail_on")
_PROPERTY = "graphguard"  # the user_properties name of one finding (a JSON object)
_DEFAULT_REPORT_DIR = "graphguard-report"  # as `graphguard run --report-dir`


@dataclass(frozen=True)
class Settings:
    """The session's options, from the command line, else the ini file."""

    enabled: bool  # guard every test (--graphguard / graphguard = true)
    fail_on: str  # lowest severity that fails a test: info | warning | error | never
    select: tuple[str, ...]  # rule code prefixes to run (empty: all)
    ignore: tuple[str, ...]  # rule code prefixes to skip
    report_dir: Path | None  # --graphguard-report: session JSON/HTML, and diagrams
    diagrams: bool  # write diagrams of the findings that fail a test
    invocation_dir: Path


@dataclass
class GuardedTest:
    """The guard of the test running in this process, and what is still to be reported."""

    nodeid: str
    guard: GraphGuard | None  # None once closed at the end of teardown
    fail_on: str
    # Findings are tracked by identity, not by index: the guard may replace a finding with a more
    # detailed one. Values hold the finding, so its id cannot be reused while it is a key here.
    taken: dict[int, Finding] = field(default_factory=dict)  # already placed in a phase
    fixture_of: dict[int, tuple[Finding, str]] = field(default_factory=dict)  # fixture set up then
    shown: dict[str, tuple[str, list[dict]]] = field(default_factory=dict)  # when -> section, props
    error: BaseException | None = None  # the test body's exception, handed to the guard at exit
    failed: bool = False
    run: dict[str, Any] = field(default_factory=dict)  # iterations, backward calls at exit


@dataclass
class SessionLog:
    """What the terminal summary and the session report are built from: the reports only, so it
    works alike in one process and on an xdist controller that never saw a guard."""

    findings: list[dict] = field(default_factory=list)
    guarded: int = 0
    failed: list[str] = field(default_factory=list)
    iterations: int = 0
    backward_calls: int = 0
    report_path: str | None = None


settings_key = pytest.StashKey[Settings]()
session_key = pytest.StashKey[SessionLog]()
current_key = pytest.StashKey[GuardedTest]()  # config-level: fixtures of wider scope see it too
state_key = pytest.StashKey[GuardedTest]()  # item-level: kept until the teardown report is made


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("graphguard", "autograd misuse (graphguard)")
    group.addoption("--graphguard", action="store_true", dest="graphguard", default=None,
                    help="run every test inside a GraphGuard; misuse fails the test")
    group.addoption("--no-graphguard", action="store_false", dest="graphguard",
                    help="do not guard every test (overrides graphguard = true in the ini file)")
    group.addoption("--graphguard-fail-on", choices=tuple(_LEVELS), default=None,
                    help="lowest finding severity that fails a test (default: error)")
    group.addoption("--graphguard-select", metavar="CODES", default=None,
                    help="rule code prefixes to run, comma-separated (GG0,GG101)")
    group.addoption("--graphguard-ignore", metavar="CODES", default=None,
                    help="rule code prefixes to skip, comma-separated")
    group.addoption("--graphguard-report", metavar="DIR", default=None,
                    help="write the session's JSON (and HTML) report and diagrams there")
    group.addoption("--graphguard-no-diagrams", action="store_true", default=False,
                    help="do not write diagrams of the findings that fail a test")
    parser.addini("graphguard", "run every test inside a GraphGuard", type="bool", default=False)
    parser.addini("graphguard_fail_on", "lowest severity that fails a test (info, warning, error, "
                  "never)", default="error")
    parser.addini("graphguard_select", "rule code prefixes to run (GG0, GG101)", default="")
    parser.addini("graphguard_ignore", "rule code prefixes to skip", default="")
    parser.addini("graphguard_report", "directory of the session's graphguard report", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "graphguard(enabled=True, select=None, ignore=None, fail_on=None): run this test "
        "inside a GraphGuard, or not (enabled=False); misuse at or above fail_on fails it")
    config.stash[settings_key] = _read_settings(config)
    config.stash[session_key] = SessionLog()
    config.pluginmanager.register(SessionListener(config), "graphguard-session")
    config.add_cleanup(lambda: _close_stray(config))


def _read_settings(config: pytest.Config) -> Settings:
    opt = config.option
    enabled = opt.graphguard if opt.graphguard is not None else bool(config.getini("graphguard"))
    fail_on = opt.graphguard_fail_on or str(config.getini("graphguard_fail_on")).strip().lower()
    if fail_on not in _LEVELS:
        raise pytest.UsageError(f"graphguard_fail_on = {fail_on!r}: use one of {', '.join(_LEVELS)}")
    try:
        select = _codes(opt.graphguard_select if opt.graphguard_select is not None
                        else config.getini("graphguard_select"))
        ignore = _codes(opt.graphguard_ignore if opt.graphguard_ignore is not None
                        else config.getini("graphguard_ignore"))
    except GraphGuardUsageError as err:
        raise pytest.UsageError(f"graphguard: {err}") from None
    where = opt.graphguard_report or str(config.getini("graphguard_report")).strip()
    base = config.invocation_params.dir
    return Settings(enabled, fail_on, select, ignore, (base / where) if where else None,
                    not opt.graphguard_no_diagrams, base)


def _codes(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """Code prefixes from "GG0, GG101", "GG0 GG101" or ["GG0"]. Only the form is checked here:
    the rule catalog imports torch, so unknown codes are caught when the first guard is made."""
    if value is None:
        return ()
    items = re.split(r"[,\s]+", value) if isinstance(value, str) else [str(v) for v in value]
    out = tuple(c.strip().upper() for c in items if c.strip())
    for c in out:
        if not _CODE.fullmatch(c):
            raise GraphGuardUsageError(f"{c!r} is not a rule code prefix (GG001, GG0, GG1)")
    return out


# ---- one test: setup, call, teardown in one guard --------------------------------------------------
@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    problem = _start(item)
    # Raise only after the setup ran: other plugins' setup wrappers stash state that their
    # teardown wrappers expect to find.
    result = yield from _phase(item, "setup")
    if problem:
        pytest.fail(problem, pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: pytest.FixtureRequest) -> Generator[None, object, object]:
    state = request.config.stash.get(current_key, None)
    if state is None or state.guard is None:
        return (yield)
    before = {id(f) for f in state.guard.findings}
    try:
        return (yield)
    finally:
        # Inner fixtures finish first, so the innermost fixture names a finding.
        for f in state.guard.findings:
            if id(f) not in before:
                state.fixture_of.setdefault(id(f), (f, fixturedef.argname))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _phase(item, "call"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    state = item.stash.get(state_key, None)
    if state is None or state.guard is None:
        return (yield)
    try:
        result = yield
    except BaseException:
        _finish(item, state, raised=True)
        raise
    _finish(item, state, raised=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    rep = yield
    state = item.stash.get(state_key, None)
    if state is None:
        return rep
    section, props = state.shown.pop(call.when, ("", []))
    if section:
        rep.sections.append((f"graphguard {call.when}", section))
    for p in props:
        entry = (_PROPERTY, json.dumps(p, default=str))
        rep.user_properties.append(entry)  # the report holds a copy of the item's list
        item.user_properties.append(entry)  # later phases' reports (JUnit reads teardown's)
    if call.when == "teardown":
        # Extra report attributes travel with the report from an xdist worker.
        rep.graphguard_run = dict(state.run, failed=state.failed, fail_on=state.fail_on)
        del item.stash[state_key]
    return rep


def _start(item: pytest.Item) -> str | None:
    """Enter the guard for ``item`` when the flag, the marker or the fixture asks for one.
    Returns the problem when the marker or the codes are wrong (the setup then fails with it)."""
    try:
        opts = _test_options(item)
        if opts is None:
            return None
        select, ignore, fail_on = opts
        from .guard import GraphGuard  # imports torch: only for a guarded test

        guard = GraphGuard(mode="collect", select=select, ignore=ignore)
    except GraphGuardUsageError as err:
        return f"graphguard: {err}"
    state = GuardedTest(item.nodeid, guard, fail_on)
    guard.__enter__()
    item.stash[state_key] = state
    item.config.stash[current_key] = state
    return None


def _test_options(item: pytest.Item) -> tuple[tuple[str, ...], tuple[str, ...], str] | None:
    """(select, ignore, fail_on) for a guarded test, None when the guard is off for it."""
    settings = item.config.stash[settings_key]
    marker = item.get_closest_marker("graphguard")
    wants_fixture = "graphguard" in getattr(item, "fixturenames", ())
    if marker is None:
        on = settings.enabled or wants_fixture
        return (settings.select, settings.ignore, settings.fail_on) if on else None
    unknown = sorted(set(marker.kwargs) - set(_MARKER_ARGS))
    if marker.args or unknown:
        raise GraphGuardUsageError(
            f"the graphguard marker takes only the keyword arguments {', '.join(_MARKER_ARGS)}"
            + (f" (got {', '.join(unknown)})" if unknown else ""))
    if not marker.kwargs.get("enabled", True):
        return None  # the graphguard fixture then says why it has no guard to give
    fail_on = str(marker.kwargs.get("fail_on") or settings.fail_on).lower()
    if fail_on not in _LEVELS:
        raise GraphGuardUsageError(f"graphguard marker: fail_on={fail_on!r}; use one of "
                                   f"{', '.join(_LEVELS)}")
    sel = marker.kwargs.get("select")
    select = _codes(sel) if sel is not None else settings.select
    ignore = settings.ignore + _codes(marker.kwargs.get("ignore"))
    return select, ignore, fail_on


def _phase(item: pytest.Item, when: str) -> Generator[None, object, object]:
    """Run one phase; then judge what it found (a finding at or above fail-on fails the phase)."""
    state = item.stash.get(state_key, None)
    if state is None or state.guard is None:
        return (yield)
    try:
        result = yield
    except BaseException as err:
        if when == "call" and isinstance(err, Exception):
            state.error = err  # GuardExit rules may explain the test's own error
        _judge(item, state, when, _take(item, state, when), raised=True)
        raise
    _judge(item, state, when, _take(item, state, when), raised=False)
    return result


def _finish(item: pytest.Item, state: GuardedTest, raised: bool) -> None:
    """End of teardown: close the guard (its exit rules run now) and judge teardown and exit."""
    hits = _take(item, state, "teardown")
    guard, state.guard = state.guard, None
    assert guard is not None
    err, state.error = state.error, None
    try:
        guard.__exit__(type(err) if err else None, err, err.__traceback__ if err else None)
    finally:
        if item.config.stash.get(current_key, None) is state:
            del item.config.stash[current_key]
    hits += _take(item, state, "exit", guard)
    state.run = {"iterations": guard.iteration, "backward_calls": guard.backward_calls}
    state.taken.clear()  # the findings leave with the reports; drop them (and their graphs) here
    state.fixture_of.clear()
    _judge(item, state, "teardown", hits, raised=raised)


# ---- what a phase found ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Hit:
    """One finding, placed: the phase it showed in and the fixture running then (if any)."""

    finding: Finding
    phase: str  # setup | call | teardown | exit (when the guard closed, after teardown)
    fixture: str | None


def _take(item: pytest.Item, state: GuardedTest, phase: str, guard: GraphGuard | None = None) -> list[Hit]:
    """The findings emitted since the last call, without those an expect() block caught."""
    guard = guard or state.guard
    assert guard is not None
    hits = []
    for f in guard.findings:
        if id(f) in state.taken:
            continue
        state.taken[id(f)] = f
        if any(f is e for e in guard.expected):
            continue  # the test said it wants this misuse
        fixture = state.fixture_of.get(id(f), (None, None))[1]
        if fixture is None and phase in ("teardown", "exit"):
            # no hook wraps a fixture's finalizer: tell it by the finding's line
            fixture = _fixture_by_line(item, f)
        hits.append(Hit(f, phase, fixture))
    return hits


def _fixture_by_line(item: pytest.Item, f: Finding) -> str | None:
    loc = f.location or f.subject.created_at
    info = getattr(item, "_fixtureinfo", None)
    if loc is None or info is None:
        return None
    for name, defs in info.name2fixturedefs.items():
        for fd in defs:
            code = getattr(inspect.unwrap(fd.func), "__code__", None)
            if code is None or Path(code.co_filename).resolve() != Path(loc.file).resolve():
                continue
            last = max((ln for *_, ln in code.co_lines() if ln is not None), default=code.co_firstlineno)
            if code.co_firstlineno <= loc.line <= last:
                return name
    return None


def _judge(item: pytest.Item, state: GuardedTest, when: str, hits: list[Hit], raised: bool) -> None:
    """Keep the phase's findings for its report; fail the phase if one reaches fail-on."""
    if not hits:
        return
    level = _LEVELS[state.fail_on]
    fails = [_LEVELS.get(h.finding.severity, 0) >= level for h in hits]
    failing = [h for h, bad in zip(hits, fails) if bad]
    settings = item.config.stash[settings_key]
    notes = []
    if failing and settings.diagrams:
        notes = _write_diagrams([h.finding for h in failing], settings, item.nodeid)
    props = [dict(h.finding.to_dict(), test=item.nodeid, phase=h.phase, fixture=h.fixture,
                  fails_test=bad) for h, bad in zip(hits, fails)]
    state.shown[when] = (_section(hits) + "".join(f"graphguard: {n}\n" for n in notes), props)
    if failing:
        state.failed = True
        if not raised:  # a phase that raised already fails; its own error stays on top
            pytest.fail(_fail_message(failing, state.fail_on, when), pytrace=False)


def _where(h: Hit) -> str:
    """Where a finding showed, in words: "in setup of fixture 'model'", "in the test"."""
    place = {"call": "in the test", "exit": "at the end of the test (when the guard closed)"}
    text = place.get(h.phase, f"in {h.phase}")
    if h.fixture:
        text += f" of fixture '{h.fixture}'" if h.phase in ("setup", "teardown") else \
            f", in fixture '{h.fixture}'"
    return text


def _section(hits: list[Hit]) -> str:
    """The findings as the text report shows them, grouped by where they showed."""
    from .report.text import render_findings, render_summary_line

    groups: dict[str, list[Finding]] = {}
    for h in hits:
        groups.setdefault(_where(h), []).append(h.finding)
    parts = [f"graphguard: {len(fs)} finding(s) {where}:{render_findings(fs)}"
             for where, fs in groups.items()]
    return "\n".join(parts) + render_summary_line([h.finding for h in hits]) + "\n"


def _fail_message(failing: list[Hit], fail_on: str, when: str) -> str:
    lines = [f"graphguard: autograd misuse (fail-on: {fail_on})"]
    for h in failing:
        f = h.finding
        at = f" at {f.location.short()}" if f.location else ""
        lines.append(f"  {f.code} {f.slug} [{f.severity}] {f.subject.name or '-'}{at} ({_where(h)})")
    lines.append(f"(details: the 'graphguard {when}' section below)")
    return "\n".join(lines)


def _write_diagrams(findings: list[Finding], settings: Settings, nodeid: str) -> list[str]:
    """Diagrams of the failing findings, one folder per test (xdist workers write in parallel).
    Returns notes for the report section (no renderer, a failed render)."""
    try:
        from .report.diagrams import write_diagrams
    except ImportError:  # diagrams are drawn by an optional part of graphguard
        return []
    base = settings.report_dir or settings.invocation_dir / _DEFAULT_REPORT_DIR
    folder = base / "tests" / re.sub(r"[^\w.-]+", "_", nodeid).strip("_")[:150]
    try:
        # quiet: this runs outside pytest's output capture; notes go to the section instead.
        # Warnings of the drawing libraries are ours, not the test's (-W error must not trip).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return list(write_diagrams(findings, str(folder), quiet=True) or [])
    except Exception as err:  # a diagram is a bonus: never fail or break a test for it
        return [f"diagrams skipped ({type(err).__name__}: {err})"]


# ---- the fixture -----------------------------------------------------------------------------------
@pytest.fixture
def graphguard(request: pytest.FixtureRequest) -> GraphGuard:
    """The GraphGuard watching this test (requesting it turns the guard on for the test).

    Assert on ``graphguard.findings``, or say that the test wants misuse to be caught::

        def test_stale_reference_is_caught(graphguard):
            with graphguard.expect("GG001"):
                train(reference_with_history)

    Findings an ``expect()`` block catches do not fail the test; the block must catch one.
    """
    state = request.node.stash.get(state_key, None)
    if state is None or state.guard is None:
        pytest.fail("graphguard fixture: the guard is off for this test "
                    "(@pytest.mark.graphguard(enabled=False)); drop the marker or the fixture",
                    pytrace=False)
    return state.guard


# ---- the session: summary and report, from the reports alone ---------------------------------------
class SessionListener:
    """Reads every test's teardown report (local, or sent back by an xdist worker) into the log.

    A plugin object because ``pytest_runtest_logreport`` gets no ``config``; the log itself lives
    in ``config.stash[session_key]``."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        run = getattr(report, "graphguard_run", None)
        if report.when != "teardown" or run is None:
            return
        log = self.config.stash[session_key]
        log.guarded += 1
        log.iterations += int(run.get("iterations", 0))
        log.backward_calls += int(run.get("backward_calls", 0))
        if run.get("failed"):
            log.failed.append(report.nodeid)
        for name, value in report.user_properties:
            if name == _PROPERTY:
                log.findings.append(json.loads(value))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    settings = config.stash.get(settings_key, None)
    log = config.stash.get(session_key, None)
    if settings is None or log is None or settings.report_dir is None or hasattr(config, "workerinput"):
        return  # only the process that saw every report writes the session report
    if not log.guarded:
        return
    try:
        log.report_path = _write_session_report(config, settings.report_dir, log, exitstatus)
    except Exception as err:  # a report failure must not hide the test results
        log.report_path = f"not written ({type(err).__name__}: {err})"


def _write_session_report(config: pytest.Config, folder: Path, log: SessionLog, exitstatus: int) -> str:
    from .report.json_report import build_report

    from .model import RunRecord

    run = RunRecord(log.iterations, log.backward_calls)
    target = " ".join(["pytest", *config.invocation_params.args])
    status = "raised" if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR) else "ok"
    # the findings as they came back in the reports (JSON objects with test, phase, fixture)
    report = build_report(log.findings, run, target=target, status=status)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "report.json"
    path.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    try:
        from .report.html import write_html  # an optional part of graphguard
    except ImportError:
        return relpath(str(path))
    html = write_html(report, str(folder))
    return relpath(str(path)) + (f", {relpath(html)}" if html else "")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    log = config.stash.get(session_key, None)
    if log is None or not log.guarded:
        return
    tr = terminalreporter
    tr.write_sep("=", "graphguard")
    from .model import count_severities
    from .report.text import summary_line

    counts = count_severities(d.get("severity", "info") for d in log.findings)
    for d in log.findings:
        loc = d.get("location") or {}
        at = f" {loc.get('file')}:{loc.get('line')}" if loc else ""
        name = (d.get("subject") or {}).get("name") or "-"
        fixture = f" fixture {d['fixture']}" if d.get("fixture") else ""
        tr.write_line(f"{d['test']} [{d.get('phase')}{fixture}] {d['code']} {d.get('slug')} "
                      f"[{d.get('severity')}] {name}{at}", red=bool(d.get("fails_test")))
    failed = f"; {len(log.failed)} failed by graphguard" if log.failed else ""
    tr.write_line(summary_line(counts, f" in {log.guarded} guarded test(s){failed}"))
    if log.report_path:
        tr.write_line(f"graphguard: report {log.report_path}")


def _close_stray(config: pytest.Config) -> None:
    """A run stopped between setup and teardown (KeyboardInterrupt): still remove every hook."""
    state = config.stash.get(current_key, None)
    if state is not None and state.guard is not None:
        guard, state.guard = state.guard, None
        guard.__exit__(None, None, None)
