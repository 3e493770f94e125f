"""Shared harness of the `graphguard fix` tests: write an annotated program to a tmp dir, run fix on
it, and check the patch its header asks for.

A program's first line says what fix must keep: `# fix: CODE family line [steps=N]` (the finding's
code, the kept candidate's family, the line of the edit in the original file; the optimizer steps
each verification run is cut to, 3 unless the finding needs more iterations to show).
"""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from graphguard.cli import main


def write_program(tmp_path: Path, source: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def run_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str, steps: int = 3,
            script: str = "train.py") -> tuple[int, dict]:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "fix.json"
    rc = main(["fix", "--max-steps", str(steps), "--json", str(out), *extra, script])
    return rc, json.loads(out.read_text(encoding="utf-8"))


def check_annotated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> dict:
    """Run fix on `source` and assert its header's patch was kept, the patched run is clean, and
    nothing was written (no --apply). Returns fix's JSON."""
    path = write_program(tmp_path, source)
    before = path.read_text()
    code, family, line, steps = re.match(r"# fix: (\S+) (\S+) (\d+)(?: steps=(\d+))?", before).groups()
    rc, doc = run_fix(tmp_path, monkeypatch, steps=int(steps or 3))
    assert rc == 0, doc
    kept = [(p["finding"]["code"], p["family"], p["line"]) for p in doc["patches"]]
    assert (code, family, int(line)) in kept, kept
    assert doc["after"]["findings"]["error"] == 0 and doc["after"]["findings"]["warning"] == 0
    assert doc["after"]["status"] in ("ok", "exited")
    assert path.read_text() == before  # no --apply: nothing written
    patch = next(p for p in doc["patches"] if p["finding"]["code"] == code)
    assert "+++ b/train.py" in patch["diff"]
    return doc
