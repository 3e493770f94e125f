"""Every annotated case in tests/cases: graphguard's findings match the annotations exactly, the
clean section stays quiet, and plain PyTorch really misbehaves in the buggy section."""
from __future__ import annotations

import re

import pytest

from casekit import CASES, expectations, found, load_case, plain_behaviour, run_guarded

CASE_FILES = sorted(p for p in CASES.glob("gg*.py"))


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.stem)
def test_findings_match_annotations(path):
    mod = load_case(path)
    guard, _ = run_guarded(mod.buggy)
    assert sorted(found(guard, path), key=str) == sorted(expectations(path), key=str)


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.stem)
def test_clean_section_is_quiet(path):
    mod = load_case(path)
    guard, err = run_guarded(mod.clean)
    assert err is None, f"clean() raised {err!r}"
    assert [(f.code, f.subject.name, f.location and f.location.line) for f in guard.findings] == []


# Clean sections whose later parts alarm when recorded: a backward from a fresh requires-grad
# leaf alone (an input-gradient probe whose gradient is never read), which GG009 cannot tell
# from a loss re-wrapped in a new leaf. Known problem; strict, so a fix shows up here.
_PROBE_ALARMS = {"gg009_rewrapped_loss", "gg012_loss_module_per_sample"}


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason="GG009 on an input-gradient probe"))
    if p.stem in _PROBE_ALARMS else p for p in CASE_FILES], ids=lambda p: p.stem)
def test_clean_section_has_no_error_when_every_iteration_is_recorded(path):
    """The default guard records only the first iterations, so the later parts of a clean section
    run in light mode, where the recorded-only checks (loss calls, hand-written products, cuts)
    never see them. Recording every iteration judges each part as a program that did it first
    would be judged: no error may come out (a warning may: wasted work is worth saying)."""
    mod = load_case(path)
    guard, err = run_guarded(mod.clean, record_iterations=None)
    assert err is None, f"clean() raised {err!r}"
    errors = [(f.code, f.subject.name, f.location and f.location.line)
              for f in guard.findings if f.severity == "error"]
    assert errors == []


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.stem)
def test_plain_torch_misbehaves(path):
    kind, pattern = plain_behaviour(path)
    mod = load_case(path)
    if kind == "raises":
        with pytest.raises(RuntimeError, match=re.compile(pattern)):
            mod.buggy()
    else:
        mod.buggy()  # the case asserts the silent damage itself
    mod.clean()
