"""Re-render a saved JSON report (`graphguard report`) in another format."""
from __future__ import annotations

import json
from typing import Any

from ..records import Finding, Related, SourceLoc, Subject
from .text import render_findings, render_summary_line

__all__ = ["render_saved", "findings_from_report"]


def _loc(d: dict | None) -> SourceLoc | None:
    if not d:
        return None
    return SourceLoc(d.get("file", ""), int(d.get("line") or 0), d.get("function", ""), d.get("code", ""))


class _SavedFinding(Finding):
    """A finding read back from JSON: its message is the saved one, not re-rendered."""

    saved_message: str = ""

    @property
    def message(self) -> str:  # type: ignore[override]
        return self.saved_message


def findings_from_report(data: dict[str, Any]) -> list[Finding]:
    out = []
    for d in data.get("findings", []):
        s = d.get("subject") or {}
        f = _SavedFinding(d["code"], d.get("slug", ""), d.get("severity", "error"), {},
                          Subject(s.get("name"), s.get("kind", "tensor"), s.get("summary", ""),
                                  _loc(s.get("created_at")), s.get("created_in_iteration")),
                          _loc(d.get("location")), d.get("iteration", 0), d.get("before_crash", True),
                          d.get("fix", ""),
                          [Related(r.get("role", ""), r.get("name"), r.get("op"), _loc(r.get("location")))
                           for r in d.get("related", [])], d.get("diagram"))
        f.saved_message = d.get("message", "")
        out.append(f)
    return out


def render_saved(data: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "text":
        fs = findings_from_report(data)
        return render_findings(fs) + render_summary_line(fs) + "\n"
    if fmt == "concise":
        from .concise import render_concise

        return render_concise(data)
    if fmt == "github":
        from .github import render_github

        return render_github(data)
    if fmt == "html":
        from .html import render_html

        return render_html(data)
    from .sarif import render_sarif

    return json.dumps(render_sarif(data), indent=2) + "\n"
