"""SARIF 2.1.0 output, for code-scanning dashboards, from the JSON report."""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

__all__ = ["render_sarif", "RuleInfo"]


class RuleInfo(NamedTuple):
    """What SARIF's driver lists of a rule (the CLI passes the catalog: report/ knows no rules)."""

    code: str
    slug: str
    summary: str

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def render_sarif(data: dict[str, Any], catalog: Sequence[RuleInfo] = ()) -> dict[str, Any]:
    results = []
    for f in data.get("findings", []):
        loc = f.get("location") or {}
        res: dict[str, Any] = {"ruleId": f["code"], "level": _LEVEL.get(f.get("severity"), "warning"),
                               "message": {"text": f.get("message", "")}}
        if loc.get("file"):
            res["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": loc["file"]},
                                                      "region": {"startLine": loc.get("line") or 1}}}]
        results.append(res)
    rules = [{"id": r.code, "name": r.slug, "shortDescription": {"text": r.summary}} for r in catalog]
    return {"version": "2.1.0",
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "runs": [{"tool": {"driver": {"name": "graphguard",
                                          "version": data.get("tool", {}).get("version", ""),
                                          "rules": rules}},
                      "results": results}]}
