"""`graphguard run` follows the processes a program starts (graphguard/processes.py): workers of
torch.multiprocessing.spawn and multiprocessing's spawn, forkserver and fork start methods each
get their own guard and partial report, merged into the run's report with `process` and `rank`
on each finding; DataLoader workers stay dormant. Each test is a real `graphguard run` of
tests/scripts/spawn_workers.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "spawn_workers.py"
LINES = SCRIPT.read_text(encoding="utf-8").splitlines()
MADE = next(i for i, t in enumerate(LINES, 1) if t.strip() == "target = model(x) * 0.5")
BACKWARD = next(i for i, t in enumerate(LINES, 1) if t.strip() == "loss.backward()")

pytestmark = [
    pytest.mark.slow,  # each run starts two or three interpreters that import torch
    pytest.mark.skipif(sys.platform != "linux", reason="fork and forkserver start methods"),
]


def run(tmp_path: Path, *script_args: str, mode: str = "collect") -> tuple[int, str, dict[str, Any]]:
    """`graphguard run --mode MODE --json r.json spawn_workers.py ARGS` in tmp_path."""
    cmd = [sys.executable, "-m", "graphguard", "run", "--mode", mode, "--no-diagrams",
           "--json", "r.json", str(SCRIPT), *script_args]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    p = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    return p.returncode, p.stderr, report


def partial_reports(tmp_path: Path) -> list[str]:
    folder = tmp_path / "graphguard-report" / "processes"
    return sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []


def workers(report: dict[str, Any]) -> list[dict[str, Any]]:
    procs = report.get("processes") or []
    assert procs and procs[0]["pid"] != procs[-1]["pid"]
    return procs[1:]  # the parent first


def stale_graph_findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    got = [f for f in report["findings"] if f["code"] == "GG001"]
    for f in got:
        assert f["subject"]["name"] == "target"
        assert f["subject"]["created_at"]["line"] == MADE
        assert f["location"]["line"] == BACKWARD
    return got


def test_torch_spawn_workers_findings_per_rank(tmp_path: Path) -> None:
    rc, err, report = run(tmp_path, "torch")
    assert rc == 1, err  # the workers crash in PyTorch (collect mode lets them)
    procs = workers(report)
    assert sorted(p["rank"] for p in procs) == [0, 1]
    found = stale_graph_findings(report)
    assert sorted(f["rank"] for f in found) == [0, 1]
    assert {f["process"] for f in found} == {p["pid"] for p in procs}
    assert all(p["iterations"] >= 1 and p["function"].endswith(".train") for p in procs)
    assert report["findings"] == found  # the parent itself trains nothing
    assert report["run"]["iterations"] == 0
    assert err.count("GG001 stale-graph") == 2 and "[rank 0, pid" in err and "[rank 1, pid" in err
    assert "graphguard/processes.py" not in err  # the worker's traceback, graphguard's frames hidden
    assert len(partial_reports(tmp_path)) == 2


def test_torch_spawn_raise_mode_summary_shows_the_worker_finding(tmp_path: Path) -> None:
    """A worker's GraphMisuseError reaches the parent as torch's ProcessRaisedException: the
    parent's summary still shows the worker's finding, and the report names the worker."""
    rc, err, report = run(tmp_path, "torch", mode="raise")
    assert rc == 1
    assert report["run"]["exception"]["type"] == "ProcessRaisedException"
    found = stale_graph_findings(report)
    assert found  # the first worker to fail, at least (torch terminates the others)
    stopped = [p for p in workers(report) if (p["exception"] or {}).get("type") == "GraphMisuseError"]
    assert stopped and {p["pid"] for p in stopped} <= {f["process"] for f in found}
    assert err.count("GG001 stale-graph") == len(found)
    assert f"graphguard: {len(found)} error(s)" in err
    assert "stopped at a finding" in err and "RuntimeError" not in err


def test_clean_torch_spawn_workers_are_silent(tmp_path: Path) -> None:
    rc, err, report = run(tmp_path, "torch", "clean", mode="raise")
    assert rc == 0, err
    assert report["findings"] == []
    procs = workers(report)
    assert sorted(p["rank"] for p in procs) == [0, 1]
    assert all(p["status"] == "ok" and p["iterations"] == 3 for p in procs)  # watched, not skipped
    assert "graphguard: no findings" in err


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_multiprocessing_process_findings_are_merged(tmp_path: Path, method: str) -> None:
    """A forked child is guarded too: the guard it inherits is dormant there (guard.py's at-fork
    hook) and a fresh guard, with its own report, watches the child's run()."""
    rc, err, report = run(tmp_path, method)
    assert rc == 1, err
    procs = workers(report)
    assert len(procs) == 2 and all(p["function"].endswith(".process_main") for p in procs)
    found = stale_graph_findings(report)
    assert len(found) == 2 and {f["process"] for f in found} == {p["pid"] for p in procs}
    assert all(f["rank"] is None for f in found)  # no torch index, no RANK: the pid names it
    assert report["run"]["iterations"] == 0  # nothing of the children counted as the parent's


def test_dataloader_workers_stay_dormant(tmp_path: Path) -> None:
    """Forked and spawned DataLoader workers: no guard, no partial report, no `processes`."""
    rc, err, report = run(tmp_path, "loader", mode="raise")
    assert rc == 0, err
    assert report["findings"] == []
    assert "processes" not in report
    assert partial_reports(tmp_path) == []
    assert not (tmp_path / "graphguard-report" / "processes").exists()
    assert report["run"]["iterations"] == 8  # both epochs of 4 batches, in the parent's guard


def test_merge_names_the_process_of_every_finding() -> None:
    """The merge itself (no subprocess): the parent's findings and each part's, with `process`
    and `rank`, the parent's run block first, parts by rank; no parts: the report unchanged."""
    from graphguard.report.json_report import merge_processes

    def report(codes: list[str], iterations: int) -> dict[str, Any]:
        return {"run": {"status": "ok", "exception": None, "iterations": iterations, "backward_calls": 1},
                "findings": [{"code": c} for c in codes]}

    parent = report(["GG103"], 0)
    assert merge_processes(parent, [], pid=1) is parent
    parts = [dict(report(["GG001"], 2), process={"pid": 30, "rank": 1, "name": "b", "function": "m.f"}),
             dict(report(["GG001", "GG002"], 3), process={"pid": 20, "rank": 0, "name": "a", "function": "m.f"})]
    merged = merge_processes(parent, parts, pid=1)
    assert [(f["code"], f["process"], f["rank"]) for f in merged["findings"]] == [
        ("GG103", 1, None), ("GG001", 20, 0), ("GG002", 20, 0), ("GG001", 30, 1)]
    assert [(p["pid"], p["rank"], p["iterations"], p["findings"]) for p in merged["processes"]] == [
        (1, None, 0, 1), (20, 0, 3, 2), (30, 1, 2, 1)]
    assert merged["run"] == parent["run"] and "processes" not in parent
