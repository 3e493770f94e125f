"""Legitimate autograd patterns stay quiet: no finding of any severity, in raise mode."""
from __future__ import annotations

import pytest

from clean.legit_patterns import ALL
from graphguard import GraphGuard


@pytest.mark.parametrize("program", ALL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("record", [2, None], ids=["default", "record-all"])
def test_no_findings(program, record):
    with GraphGuard(mode="raise", record_iterations=record) as guard:
        program()
    assert [(f.code, f.subject.name, f.location and f.location.line) for f in guard.findings] == []


@pytest.mark.parametrize("program", ALL, ids=lambda f: f.__name__)
def test_runs_under_plain_torch(program):
    program()  # the patterns are real, working programs
