"""Re-render a saved JSON report (`graphguard report`) in another format."""
from __future__ import annotations

import json
from typing import Any, Sequence

from ..model import Finding
from .sarif import RuleInfo
from .text import render_findings, render_summary_line

__all__ = ["render_saved", "findings_from_report"]


def findings_from_report(data: dict[str, Any]) -> list[Finding]:
    """The report's findings as Finding objects, their messages as saved (not re-worded)."""
    return [Finding.from_dict(d) for d in data.get("findings", [])]


def render_saved(data: dict[str, Any], fmt: str, catalog: Sequence[RuleInfo] = ()) -> str:
    """`data` as text, json, html or sarif; `catalog` lists the rules for SARIF's driver."""
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

    return json.dumps(render_sarif(data, catalog), indent=2) + "\n"
