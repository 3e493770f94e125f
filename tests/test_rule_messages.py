"""Rules as declared messages (issue 31, item 1): every story a rule tells is a message with an id;
the message fixes the severity; findings, reports, `--select`/`--ignore`, `expect()` and
`graphguard explain` all speak in ids."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from graphguard import GraphGuard
from graphguard.errors import GraphGuardUsageError
from graphguard.model import Message, Related, Role
from graphguard.model.messages import template_fields
from graphguard.rules import ALL_RULES, check_codes, instantiate, message_for_id

ROOT = Path(__file__).resolve().parents[1]


# one program that tells both stories of GG012: backward() and autograd.grad from a non-scalar
BOTH = textwrap.dedent("""\
    import torch
    w = torch.nn.Parameter(torch.ones(4))
    x = torch.randn(4)
    per_sample = (w * x) ** 2
    try:
        per_sample.backward()
    except RuntimeError:
        pass
    out = w * 3
    try:
        torch.autograd.grad(out, w)
    except RuntimeError:
        pass
""")


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_every_rule_declares_its_messages(rule):
    assert rule.messages, f"{rule.code} declares no message"
    names = [m.name for m in rule.messages]
    assert len(set(names)) == len(names)
    for m in rule.messages:
        assert isinstance(m, Message) and m.code == rule.code and m.id == f"{rule.code}.{m.name}"
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", m.name), m.id
        assert m.summary and m.template, m.id
        assert message_for_id(m.id) is m
        # a GG0xx code is an error code (RULES.md); a message of it may be milder (a part of
        # the model rather than all of it), but one message at least tells the error
    if rule.code.startswith("GG0"):
        assert any(m.severity == "error" for m in rule.messages), rule.code


def test_template_fields():
    assert template_fields("{name} has shape {shape}; {fix!r} {x:>4}") == {"name", "shape", "fix", "x"}
    assert template_fields("no fields {{here}}") == frozenset()


def test_a_message_has_a_valid_severity_and_name():
    with pytest.raises(ValueError):
        Message("x", "fatal", "t", "s")
    with pytest.raises(ValueError):
        Message("Has Spaces", "error", "t", "s")


def _run_both(**guard):
    w_seen = []
    with GraphGuard(mode="collect", **guard) as g:
        exec(compile(BOTH, "<both>", "exec"), {"__name__": "both", "w_seen": w_seen})
    return g.findings


def test_findings_carry_their_message_id_and_its_severity():
    found = _run_both()
    ids = sorted(f.message_id for f in found if f.code == "GG012")
    assert ids == ["GG012.autograd-grad", "GG012.backward"]
    for f in found:
        if f.message_id:
            assert f.severity == message_for_id(f.message_id).severity


def test_ignore_and_select_by_message_id():
    ids = {f.message_id for f in _run_both(ignore=["GG012.backward", "GG903"]) if f.code == "GG012"}
    assert ids == {"GG012.autograd-grad"}
    ids = {f.message_id for f in _run_both(select=["GG012.backward"])}
    assert ids == {"GG012.backward"}
    # a code prefix next to one of its message ids selects the whole code
    ids = {f.message_id for f in _run_both(select=["GG012.backward", "GG012"]) if f.code == "GG012"}
    assert ids == {"GG012.backward", "GG012.autograd-grad"}


def test_instantiate_mutes_messages_not_rules():
    rules = {r.code: r for r in instantiate(ignore=["GG012.backward"])}
    assert rules["GG012"].muted == {"backward"}
    assert rules["GG001"].muted == frozenset()
    assert "GG012" not in {r.code for r in instantiate(ignore=["GG012"])}


@pytest.mark.parametrize("bad", ["GG012.nope", "GG999.backward", "GG0123"])
def test_an_unknown_message_id_is_a_usage_error(bad):
    with pytest.raises(GraphGuardUsageError, match="unknown"):
        check_codes([bad])
    with pytest.raises(GraphGuardUsageError):
        GraphGuard(ignore=[bad])


def test_expect_takes_a_message_id():
    w = torch.nn.Parameter(torch.ones(4))
    g = GraphGuard(mode="collect")
    with g:
        with g.expect("GG012.backward") as caught:
            try:
                (w * 2).backward()
            except RuntimeError:
                pass
    assert [f.message_id for f in caught.findings] == ["GG012.backward"]


def _gg(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphguard", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_cli_reports_ids_and_ignores_by_id(tmp_path):
    (tmp_path / "both.py").write_text(BOTH)
    _gg("run", "--mode", "collect", "--no-diagrams", "--json", "r.json", "both.py", cwd=tmp_path)
    rep = json.loads((tmp_path / "r.json").read_text())
    gg012 = {(f["message_id"], f["subject"]["name"], f["location"]["line"])
             for f in rep["findings"] if f["code"] == "GG012"}
    assert gg012 == {("GG012.backward", "per_sample", 6), ("GG012.autograd-grad", "out", 11)}
    _gg("run", "--mode", "collect", "--no-diagrams", "--json", "r2.json", "--ignore", "GG012.backward",
        "both.py", cwd=tmp_path)
    rep = json.loads((tmp_path / "r2.json").read_text())
    gg012 = {(f["message_id"], f["before_crash"]) for f in rep["findings"] if f["code"] == "GG012"}
    # the muted story is not told before the crash; PyTorch's error is still explained after it
    # (GG903's message, filed under the family's code)
    assert gg012 == {("GG012.autograd-grad", True), ("GG903.family-error", False)}
    p = _gg("run", "--ignore", "GG012.typo", "both.py", cwd=tmp_path)
    assert p.returncode == 2 and "GG012.typo" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_cli_explain_lists_a_codes_messages(tmp_path):
    p = _gg("explain", "GG012", cwd=tmp_path)
    assert p.returncode == 0
    assert "`GG012.backward` (error)" in p.stdout and "`GG012.autograd-grad` (error)" in p.stdout
    p = _gg("explain", "GG012.autograd-grad", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("GG012.autograd-grad (error)")
    p = _gg("explain", "GG012.nope", cwd=tmp_path)
    assert p.returncode == 2 and "GG012.nope" in p.stderr


def test_a_saved_report_keeps_the_message_id(tmp_path):
    from graphguard.model import Finding

    f = next(f for f in _run_both() if f.message_id == "GG012.backward")
    back = Finding.from_dict(json.loads(json.dumps(f.to_dict())))
    assert back.message_id == "GG012.backward" and back.message == f.message


def test_roles_are_an_enum_and_reports_read_their_value():
    r = Related("fix-at")
    assert r.role is Role.FIX_AT and r.to_dict()["role"] == "fix-at" and f"{r.role}" == "fix-at"
    # a report of a later version may carry a role this one does not know: kept as text
    assert Related("some-new-role").to_dict()["role"] == "some-new-role"


def test_rules_write_roles_as_the_enum():
    """Related entries in rules name their role by Role member, not by a free string."""
    bad = []
    for p in (ROOT / "graphguard" / "rules").rglob("*.py"):
        for i, line in enumerate(p.read_text().splitlines(), 1):
            if re.search(r"Related\(\s*[\"']", line):
                bad.append(f"{p.name}:{i}")
    assert not bad, bad


def test_severity_is_chosen_by_message_not_in_wording():
    """No rule passes severity= when it makes a finding, nor computes one: the message its
    detection picks fixes it. The catalog severity (`severity = "error"`) is the one assignment."""
    bad = []
    for p in (ROOT / "graphguard" / "rules").rglob("*.py"):
        for i, line in enumerate(p.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if not re.search(r"\bseverity\s*=(?!=)", code):
                continue
            if re.fullmatch(r"\s*severity\s*=\s*\"(error|warning|info)\"\s*", code):
                continue  # the class attribute
            if re.fullmatch(r"\s*severity: ClassVar\[str\].*", code):
                continue
            bad.append(f"{p.name}:{i}: {line.strip()}")
    assert not bad, "\n".join(bad)
