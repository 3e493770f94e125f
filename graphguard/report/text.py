"""The text report: what a person reads on stderr in five seconds."""
from __future__ import annotations

import os
from typing import Iterable

from ..model import SEVERITIES, Finding, SourceLoc, count_severities, relpath, severity_rank

__all__ = ["render_findings", "render_finding", "render_summary_line", "summary_line", "worst_first"]


def _line(label: str, loc: SourceLoc | None, extra: str = "") -> str:
    if loc is None:
        return ""
    code = f"    {loc.code}" if loc.code else ""
    return f"  {label:<12} {relpath(loc.file)}:{loc.line}{extra}{code}\n"


def render_finding(f: Finding) -> str:
    """One finding: code and sentence, the lines that matter with their source, the fix."""
    out = f"{f.code} {f.slug} [{f.severity}] {f.message}\n"
    s = f.subject
    if s.created_at is not None and s.created_at != f.location:
        it = f" (iteration {s.created_in_iteration})" if s.created_in_iteration is not None else ""
        out += _line("created", s.created_at, it)
    out += _line("here", f.location, f" (iteration {f.iteration})")
    for r in f.related[:6]:
        what = " ".join(x for x in (r.op, r.name) if x)
        out += _line(r.role, r.location, f" [{what}]" if what else "")
    out += f"  {'fix':<12} {f.fix}\n"
    if f.diagram:
        out += f"  {'diagram':<12} {f.diagram.get('svg') or f.diagram.get('dot')}\n"
    return out


def worst_first(severity: str | None) -> int:
    """Sort key: errors first, then warnings, info, anything else last."""
    return len(SEVERITIES) - 1 - severity_rank(severity, -1)


def summary_line(counts: dict[str, int], suffix: str = "") -> str:
    """The one summary line: `graphguard: 1 error(s), 0 warning(s), 2 info`, plus `suffix`."""
    return (f"graphguard: {counts['error']} error(s), {counts['warning']} warning(s), "
            f"{counts['info']} info{suffix}")


def render_summary_line(findings: Iterable[Finding]) -> str:
    return summary_line(count_severities(f.severity for f in findings))


def render_findings(findings: Iterable[Finding]) -> str:
    fs = sorted(findings, key=lambda f: (worst_first(f.severity), f.iteration))
    if not fs:
        return "graphguard: no findings\n"
    body = "\n".join(render_finding(f) for f in fs)
    return f"\n{body}{os.linesep if not body.endswith(os.linesep) else ''}"
