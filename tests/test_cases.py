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
