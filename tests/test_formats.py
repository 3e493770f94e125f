"""`--format concise` and `--format github` on `graphguard run` and `graphguard report`, checked
line by line (codes, paths, lines, columns); SARIF relatedLocations (creation, mutation, fix)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

STALE = textwrap.dedent("""\
    import torch
    w = torch.nn.Parameter(torch.ones(3))
    scale = torch.ones(3, requires_grad=True)
    ref = torch.sin(scale * 2)
    opt = torch.optim.SGD([w], lr=0.1)
    for step in range(2):
        loss = ((w - ref) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")

INPLACE = textwrap.dedent("""\
    import torch
    w = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([w], lr=0.1)
    for step in range(2):
        h = (w * 2).sigmoid()
        h.mul_(2)
        loss = h.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")

CONCISE = re.compile(r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<code>GG\d{3}) (?P<msg>\S.*)$")
GITHUB = re.compile(r"^::(?P<cmd>error|warning|notice) (?P<props>[^:]*)::(?P<msg>.*)$")


def gg(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    if args[0] == "report":  # in this process: no torch start-up per call
        import contextlib
        import io

        from graphguard.cli import main

        out, err, old = io.StringIO(), io.StringIO(), os.getcwd()
        os.chdir(cwd)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(list(args))
        finally:
            os.chdir(old)
        return subprocess.CompletedProcess(args, rc, out.getvalue(), err.getvalue())
    env = dict(os.environ, GRAPHGUARD_DOT="none")
    return subprocess.run([sys.executable, "-m", "graphguard", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def concise(text: str) -> list[tuple[str, int, int, str, str]]:
    out = []
    for line in text.splitlines():
        m = CONCISE.match(line)
        if m:
            out.append((m["path"], int(m["line"]), int(m["col"]), m["code"], m["msg"]))
    return out


def github(text: str) -> list[tuple[str, dict[str, str], str]]:
    out = []
    for line in text.splitlines():
        m = GITHUB.match(line)
        if m:
            props = dict(p.split("=", 1) for p in m["props"].split(",")) if m["props"] else {}
            out.append((m["cmd"], props, m["msg"]))
    return out


_RUNS: dict[tuple[str, str], tuple[Path, subprocess.CompletedProcess]] = {}


def run_script(tmp_path: Path, name: str, source: str, fmt: str) -> subprocess.CompletedProcess:
    """Run once per (script, format) in this session; the JSON report is copied to tmp_path."""
    key = (name, fmt)
    if key not in _RUNS:
        (tmp_path / name).write_text(source)
        p = gg("run", "--mode", "collect", "--no-diagrams", "--format", fmt, "--json",
               name.replace(".py", ".json"), name, cwd=tmp_path)
        _RUNS[key] = (tmp_path, p)
    where, p = _RUNS[key]
    if where != tmp_path:
        for f in (name, name.replace(".py", ".json")):
            (tmp_path / f).write_text((where / f).read_text())
    return p


def test_run_concise_one_line_per_finding(tmp_path):
    p = run_script(tmp_path, "stale.py", STALE, "concise")
    assert p.returncode == 1  # the script's own error (PyTorch's) wins, as with text
    lines = concise(p.stderr)
    assert [x[:4] for x in lines] == [("stale.py", 3, 1, "GG103"), ("stale.py", 9, 5, "GG001")]
    assert lines[1][4].startswith("`ref` ") and "ref.detach()" in lines[1][4]
    # only the concise lines describe findings: no text-format detail lines
    assert "  created " not in p.stderr and "  here " not in p.stderr
    assert p.stderr.rstrip().splitlines()[-1].startswith("graphguard: 1 error(s), 0 warning(s), 1 info")


def test_report_concise_equals_run(tmp_path):
    p = run_script(tmp_path, "stale.py", STALE, "concise")
    r = gg("report", "stale.json", "--format", "concise", cwd=tmp_path)
    assert r.returncode == 0
    assert r.stdout.splitlines() == [f"{a}:{b}:{c}: {d} {e}" for a, b, c, d, e in concise(p.stderr)]
    assert len(r.stdout.splitlines()) == 2  # nothing else on stdout


def test_github_workflow_commands(tmp_path):
    p = run_script(tmp_path, "stale.py", STALE, "github")
    from_run = github(p.stderr)
    r = gg("report", "stale.json", "--format", "github", cwd=tmp_path)
    from_report = github(r.stdout)
    assert len(r.stdout.splitlines()) == 2 and from_run == from_report
    assert [(cmd, props) for cmd, props, _ in from_report] == [
        ("notice", {"file": "stale.py", "line": "3", "col": "1", "title": "GG103 needless-requires-grad"}),
        ("error", {"file": "stale.py", "line": "9", "col": "5", "title": "GG001 stale-graph"}),
    ]
    assert from_report[1][2].startswith("`ref` was built in iteration 0")


def test_github_severities_and_escaping(tmp_path):
    report = {"schema_version": 1, "tool": {"name": "graphguard", "version": "0"},
              "run": {"target": "t.py"}, "findings": [
                  {"code": "GG101", "slug": "graph-leak", "severity": "warning",
                   "message": "50% more,\nevery: step", "subject": {"name": "x", "created_at": None},
                   "location": {"file": "dir,a/b:c.py", "line": 7}, "related": []},
                  {"code": "GG901", "slug": "internal-error", "severity": "warning",
                   "message": "oops", "subject": None, "location": None, "related": []},
                  {"code": "GG003", "slug": "double-backward", "severity": "error", "message": "m",
                   "subject": {"name": "y", "created_at": {"file": "t.py", "line": 2}},
                   "location": None, "related": []}]}
    (tmp_path / "r.json").write_text(json.dumps(report))
    lines = gg("report", "r.json", "--format", "github", cwd=tmp_path).stdout.splitlines()
    assert lines == [
        "::warning file=dir%2Ca/b%3Ac.py,line=7,col=1,title=GG101 graph-leak::50%25 more,%0Aevery: step",
        "::error file=t.py,line=2,col=1,title=GG003 double-backward::m",  # no location: creation line
        "::warning title=GG901 internal-error::oops",
    ]
    lines = gg("report", "r.json", "--format", "concise", cwd=tmp_path).stdout.splitlines()
    assert lines == ["dir,a/b:c.py:7:1: GG101 50% more, every: step", "t.py:2:1: GG003 m",
                     "t.py:1:1: GG901 oops"]


def test_sarif_related_locations(tmp_path):
    run_script(tmp_path, "stale.py", STALE, "concise")
    run_script(tmp_path, "inplace.py", INPLACE, "text")
    stale = json.loads(gg("report", "stale.json", "--format", "sarif", cwd=tmp_path).stdout)
    res = {r["ruleId"]: r for r in stale["runs"][0]["results"]}
    rel = [(x["physicalLocation"]["artifactLocation"]["uri"], x["physicalLocation"]["region"]["startLine"],
            x["message"]["text"]) for x in res["GG001"]["relatedLocations"]]
    assert rel[0] == ("stale.py", 4, "created: ref")
    assert ("stale.py", 9, "consumed-by: backward") in rel
    assert [x["id"] for x in res["GG001"]["relatedLocations"]] == list(range(1, len(rel) + 1))
    inplace = json.loads(gg("report", "inplace.json", "--format", "sarif", cwd=tmp_path).stdout)
    r5 = inplace["runs"][0]["results"][0]
    assert r5["ruleId"] == "GG005"
    roles = {(x["message"]["text"].split(":")[0], x["physicalLocation"]["region"]["startLine"])
             for x in r5["relatedLocations"]}
    assert {("saved-at", 5), ("modified-at", 6)} <= roles
    # a fix-at place (where the fix goes) is carried too
    data = json.loads((tmp_path / "inplace.json").read_text())
    data["findings"][0]["related"].append({"role": "fix-at", "name": "h", "op": None,
                                           "location": {"file": "inplace.py", "line": 5}})
    (tmp_path / "fix.json").write_text(json.dumps(data))
    fixed = json.loads(gg("report", "fix.json", "--format", "sarif", cwd=tmp_path).stdout)
    texts = [x["message"]["text"] for x in fixed["runs"][0]["results"][0]["relatedLocations"]]
    assert texts[-1] == "fix-at: h"
