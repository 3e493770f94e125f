"""The JSON report of REPORT.md (schema_version 1): the one document every output renders from."""
from __future__ import annotations

import json
from typing import Any, Iterable

import torch

from .._version import __version__
from ..errors import GraphGuardUsageError
from ..model import Finding, RunRecord, relpath

__all__ = ["build_report", "load_report", "merge_processes", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1


def build_report(findings: Iterable[Finding | dict[str, Any]], run: RunRecord,
                 target: str | None = None, status: str = "ok",
                 exception: BaseException | None = None) -> dict[str, Any]:
    """The report of a run: its findings (Finding objects, or their JSON objects as they came back
    from pytest workers) and what the run did."""
    exc = None
    if exception is not None:
        first = str(exception).strip().splitlines()
        exc = {"type": type(exception).__name__, "message": first[0] if first else ""}
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "graphguard", "version": __version__},
        "torch_version": torch.__version__,
        "run": {"target": relpath(target) if target else None, "status": status, "exception": exc,
                "iterations": run.iterations, "backward_calls": run.backward_calls},
        "findings": [f if isinstance(f, dict) else f.to_dict() for f in findings],
    }


def load_report(path: str) -> dict[str, Any]:
    """Read a saved report; a file that is not a graphguard report is a clear usage error."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise GraphGuardUsageError(f"no such report file: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise GraphGuardUsageError(f"{path} is not a graphguard JSON report ({err})") from None
    if not isinstance(data, dict) or data.get("tool", {}).get("name") != "graphguard" \
            or "findings" not in data:
        raise GraphGuardUsageError(f"{path} is not a graphguard JSON report")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise GraphGuardUsageError(
            f"{path} has schema_version {data.get('schema_version')!r}; this graphguard reads {SCHEMA_VERSION}")
    return data


def merge_processes(report: dict[str, Any], parts: Iterable[dict[str, Any]],
                    pid: int, rank: int | str | None = None) -> dict[str, Any]:
    """The run's report with the partial reports of the processes it started (`graphguard run`
    follows spawned, forkserver and forked processes): every finding gains `process` (the pid that
    found it) and `rank`, and `processes` lists each process's run block, the parent's first.
    Without parts the report is returned unchanged."""
    parts = list(parts)
    if not parts:
        return report
    run = report.get("run") or {}
    processes = [{"pid": pid, "rank": rank, "name": "MainProcess", "function": None,
                  "status": run.get("status"), "exception": run.get("exception"),
                  "iterations": run.get("iterations"), "backward_calls": run.get("backward_calls"),
                  "findings": len(report.get("findings", []))}]
    findings = [dict(f, process=pid, rank=rank) for f in report.get("findings", [])]

    def order(part: dict[str, Any]) -> tuple[Any, ...]:
        p = part["process"]
        r = p.get("rank")
        return (r is None, str(type(r)), r if r is not None else 0, p.get("pid", 0))

    for part in sorted(parts, key=order):
        proc, prun = part["process"], part.get("run") or {}
        own = part.get("findings", [])
        processes.append({"pid": proc.get("pid"), "rank": proc.get("rank"), "name": proc.get("name"),
                          "function": proc.get("function"), "status": prun.get("status"),
                          "exception": prun.get("exception"), "iterations": prun.get("iterations"),
                          "backward_calls": prun.get("backward_calls"), "findings": len(own)})
        findings += [dict(f, process=proc.get("pid"), rank=proc.get("rank")) for f in own]
    return dict(report, findings=findings, processes=processes)
