"""Meta-tests of the rule catalog: codes unique and stable in form, documentation complete and in
sync, every rule exercised by a case file, CLI listing and explanation."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from graphguard.docs import rule_doc, rules_markdown
from graphguard.rules import ALL_RULES, DOC_HEADINGS

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "cases"
NO_CASE_NEEDED = {"GG901",  # graphguard's own failure: covered by fault-injection tests
                  "GG019"}  # needs two processes: tests/test_ddp_ranks.py and tests/test_rank_accounts.py


def test_codes_and_slugs_unique_and_well_formed():
    codes = [r.code for r in ALL_RULES]
    slugs = [r.slug for r in ALL_RULES]
    assert len(set(codes)) == len(codes)
    assert len(set(slugs)) == len(slugs)
    for r in ALL_RULES:
        assert re.fullmatch(r"GG\d{3}", r.code)
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.slug)
        assert r.severity in ("error", "warning", "info")
        if r.code.startswith("GG0"):
            assert r.severity == "error", "GG0xx rules are errors (RULES.md)"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_docstring_has_every_heading(rule):
    doc = rule.__doc__ or ""
    for heading in DOC_HEADINGS:
        assert f"## {heading}" in doc, f"{rule.code} lacks '## {heading}'"
    assert rule.messages and rule.summary


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.code not in NO_CASE_NEEDED],
                         ids=lambda r: r.code)
def test_every_rule_has_an_annotated_case(rule):
    files = list(CASES.glob(f"{rule.code.lower()}_*.py"))
    assert files, f"no tests/cases/{rule.code.lower()}_*.py"
    assert any(f"expect: {rule.code}" in f.read_text() for f in CASES.glob("gg*.py"))


def test_docs_rules_md_is_generated_and_in_sync():
    assert (ROOT / "docs" / "rules.md").read_text() == rules_markdown(), \
        "run `make docs` (python -m graphguard.docs > docs/rules.md)"


def test_readme_lists_every_rule():
    readme = (ROOT / "README.md").read_text()
    for r in ALL_RULES:
        assert f"| {r.code} | {r.slug} |" in readme


def test_cli_rules_and_explain():
    out = subprocess.run([sys.executable, "-m", "graphguard", "rules"], capture_output=True,
                         text=True, check=True).stdout
    assert [line.split()[0] for line in out.splitlines()] == sorted(r.code for r in ALL_RULES)
    ex = subprocess.run([sys.executable, "-m", "graphguard", "explain", "gg001"],
                        capture_output=True, text=True, check=True).stdout
    assert ex == rule_doc(next(r for r in ALL_RULES if r.code == "GG001")) + "\n"


def test_cli_unknown_code_is_a_clear_error():
    p = subprocess.run([sys.executable, "-m", "graphguard", "explain", "GG999"], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "GG999" in p.stderr
