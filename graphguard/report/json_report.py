"""The JSON report of REPORT.md (schema_version 1): the one document every output renders from."""
from __future__ import annotations

import json
from typing import Any, Iterable

import torch

from .._version import __version__
from ..errors import GraphGuardUsageError
from ..model import Finding, RunRecord, relpath

__all__ = ["build_report", "load_report", "SCHEMA_VERSION"]

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
