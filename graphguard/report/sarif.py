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


def _physical(loc: dict[str, Any]) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": loc["file"]},
                                 "region": {"startLine": loc.get("line") or 1}}}


def _related_locations(f: dict[str, Any]) -> list[dict[str, Any]]:
    """The subject's creation line, then every related place (modified-at, cut-by, fix-at, ...)."""
    out: list[dict[str, Any]] = []
    subject = f.get("subject") or {}
    places = [("created", subject.get("name"), None, subject.get("created_at"))]
    places += [(r.get("role", ""), r.get("name"), r.get("op"), r.get("location"))
               for r in f.get("related") or [] if isinstance(r, dict)]
    for role, name, op, loc in places:
        if not isinstance(loc, dict) or not loc.get("file"):
            continue
        what = " ".join(str(x) for x in (op, name) if x)
        entry = _physical(loc)
        entry["id"] = len(out) + 1
        entry["message"] = {"text": f"{role}: {what}" if what else role}
        out.append(entry)
    return out


def render_sarif(data: dict[str, Any], catalog: Sequence[RuleInfo] = ()) -> dict[str, Any]:
    results = []
    for f in data.get("findings", []):
        loc = f.get("location") or {}
        res: dict[str, Any] = {"ruleId": f["code"], "level": _LEVEL.get(f.get("severity"), "warning"),
                               "message": {"text": f.get("message", "")}}
        if loc.get("file"):
            res["locations"] = [_physical(loc)]
        related = _related_locations(f)
        if related:
            res["relatedLocations"] = related
        results.append(res)
    rules = [{"id": r.code, "name": r.slug, "shortDescription": {"text": r.summary}} for r in catalog]
    return {"version": "2.1.0",
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "runs": [{"tool": {"driver": {"name": "graphguard",
                                          "version": data.get("tool", {}).get("version", ""),
                                          "rules": rules}},
                      "results": results}]}
